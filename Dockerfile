# kb-eval as a GitHub Docker container action.
#
# A release publishes this image to ghcr.io and its action.yml points at it, so
# a user's job pulls it (.github/workflows/release.yml). The project's own CI,
# the tests and `uses: ./` build it from this file the way the runner does
# (docker build, context = this folder, no --pull, no build args; see
# docs/runner-contract.md). Measured sizes and build times: docs/release.md.
#
# Two stages from the same base. `venv` has pip and builds the virtual
# environment; `runtime` has only the Python interpreter and its standard
# library and copies the finished venv in. BuildKit builds the two in parallel.

# ---- venv: hash-checked install of prebuilt wheels ------------------------
FROM debian:bookworm-slim AS venv

# python3.11-venv brings ensurepip (pip and setuptools as wheels); it stays in
# this stage. No recommends, so no compiler either.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11-venv \
 && rm -rf /var/lib/apt/lists/*

# Every dependency pinned with its hashes (requirements.lock, compiled from
# requirements.in); --no-deps so nothing unlisted slips in, --only-binary so no
# sdist is ever built. pip compiles each installed module to bytecode. pip and
# setuptools leave the venv afterwards: the action installs nothing at run time.
# The venv is made by /usr/bin/python3.11, the one path the runtime stage has.
COPY requirements.lock /tmp/requirements.lock
RUN /usr/bin/python3.11 -m venv /opt/venv \
 && /opt/venv/bin/pip install --no-cache-dir --disable-pip-version-check --no-input \
      --require-hashes --no-deps --only-binary=:all: -r /tmp/requirements.lock \
 && /opt/venv/bin/pip uninstall -y --disable-pip-version-check pip setuptools

# ---- runtime: the interpreter, the venv, the action -----------------------
FROM debian:bookworm-slim AS runtime

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

# The interpreter (python3.11-minimal) and the standard library with sqlite3
# and ssl (libpython3.11-stdlib): bookworm's Python is 3.11, the version the
# project targets. Not the `python3` or `python3.11` packages: they add pydoc,
# tzdata and the python3 symlinks, none of which the action uses. Without the
# `python3` package nothing byte-compiles the standard library at install, so it
# is done here (otherwise every step would compile what it imports). apt-get
# clean: the official slim image drops downloaded .debs by itself, debootstrap
# keeps them.
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11-minimal libpython3.11-stdlib \
 && /usr/bin/python3.11 -m compileall -q -j 0 /usr/lib/python3.11 \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/log/apt/* /var/log/dpkg.log

COPY --from=venv /opt/venv /opt/venv

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
