# kb-eval as a GitHub Docker container action.
#
# A release publishes this image to ghcr.io and its action.yml points at it, so
# a user's job pulls it (.github/workflows/release.yml). The project's own CI,
# the tests and `uses: ./` build it from this file the way the runner does
# (docker build, context = this folder, no --pull, no build args; see
# docs/runner-contract.md). Sizes and build times, measured: docs/adr/0008-one-slim-image-stage-with-locked-wheels-and-no-git.md.
FROM debian:bookworm-slim

# Documentation, manual pages and translations of the packages installed below
# are never read in a CI step; the official slim base already skips them, a
# plain debootstrap base does not. Copyright files stay.
RUN printf '%s\n' \
      'path-exclude /usr/share/doc/*' \
      'path-include /usr/share/doc/*/copyright' \
      'path-exclude /usr/share/man/*' \
      'path-exclude /usr/share/info/*' \
      'path-exclude /usr/share/locale/*' \
      > /etc/dpkg/dpkg.cfg.d/kb-eval-no-docs

# One layer, so nothing it removes is still shipped in a layer below:
# - the interpreter (python3.11-minimal) and the standard library with sqlite3
#   and ssl (libpython3.11-stdlib): bookworm's Python is 3.11, the version the
#   project targets; no recommends, so no compiler;
# - python3.11-venv only to build the venv: every dependency pinned with its
#   hashes (requirements.lock, compiled from requirements.in), --no-deps so
#   nothing unlisted slips in, --only-binary so no sdist is ever built; pip
#   compiles what it installs;
# - then pip, setuptools and the venv package (with what only it needed:
#   ensurepip's wheels, python3, CA certificates, openssl) leave again: the
#   action installs nothing at run time. RecommendsImportant=false, or
#   python3.11-minimal's recommendation would keep them.
# - nothing else byte-compiles the standard library without the `python3`
#   package, so it is done here (else every step compiles what it imports).
# - no git: baseline-ref and a pull request's base commit are read from the
#   checkout's history by dulwich, in Python (scanner/git/); git would
#   bring perl and run nothing the action needs.
# One RUN rather than a build stage and a runtime stage: the same image, but
# one apt-get update instead of two (measured in docs/adr/0008-one-slim-image-stage-with-locked-wheels-and-no-git.md).
COPY requirements.lock /tmp/requirements.lock
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11-minimal libpython3.11-stdlib python3.11-venv \
 && /usr/bin/python3.11 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-input \
      --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock \
 && /opt/venv/bin/pip uninstall -y --disable-pip-version-check pip setuptools \
 && apt-get purge -y --auto-remove -o APT::AutoRemove::RecommendsImportant=false python3.11-venv \
 && /usr/bin/python3.11 -m compileall -q -j 0 /usr/lib/python3.11 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log /tmp/requirements.lock

# Without a TTY (the runner passes no -t) stdout is block-buffered, and
# annotations would reach the log late and out of order with stderr.
ENV PYTHONUNBUFFERED=1

# The action repository is not mounted at run time: the code lives in the
# image. The package is compiled here, once, so no step spends its start-up
# compiling it (.dockerignore keeps any bytecode of the build context out;
# entrypoint.py runs as a script, which is never read from a cache).
COPY entrypoint.py /app/entrypoint.py
COPY scanner/ /app/scanner/
COPY schema/ /app/schema/
RUN /opt/venv/bin/python -m compileall -q /app/scanner

# No USER and no WORKDIR (GitHub's Dockerfile guidance): the runner sets
# --workdir /github/workspace and runs as the image user.
ENTRYPOINT ["/opt/venv/bin/python", "/app/entrypoint.py"]
