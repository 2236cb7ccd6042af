# kb-eval as a GitHub Docker container action. The runner builds this file on
# every job (docker build, context = this folder, no --pull, no build args), so
# it is kept small and quick: Debian's own Python, one hash-checked install of
# prebuilt wheels, no compiler.
FROM debian:bookworm-slim

# bookworm's python3 is 3.11, the version the project targets. No recommends
# (python3-pip would bring a compiler). apt-get clean: the official slim image
# drops downloaded .debs by itself, a plain debootstrap base keeps them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*

# Every dependency pinned with its hashes (requirements.lock, compiled from
# requirements.in); --no-deps so nothing unlisted slips in, --only-binary so
# no sdist is ever built. pip and setuptools leave the venv afterwards: the
# action never installs anything at run time.
COPY requirements.lock /tmp/requirements.lock
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-input \
      --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock \
 && /opt/venv/bin/pip uninstall -y --disable-pip-version-check pip setuptools \
 && rm /tmp/requirements.lock

# Without a TTY (the runner passes no -t) stdout is block-buffered, and
# annotations would reach the log late and out of order with stderr.
ENV PYTHONUNBUFFERED=1

# The action repository is not mounted at run time: the code lives in the image.
COPY entrypoint.py /app/entrypoint.py
COPY scanner/ /app/scanner/
COPY schema/ /app/schema/

# No USER and no WORKDIR (GitHub's Dockerfile guidance): the runner sets
# --workdir /github/workspace and runs as the image user.
ENTRYPOINT ["/opt/venv/bin/python", "/app/entrypoint.py"]
