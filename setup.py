"""Package discovery, which pyproject.toml cannot express alone.

The packages are found, never listed: a list kept by hand once left `scanner.render` out of every
installed copy while the checkout's tests stayed green. The one addition is the published schema,
which lives in the top-level schema/ folder and is shipped inside the package as `scanner._schema`.
"""

from setuptools import find_packages, setup

SCHEMA_PACKAGE = "scanner._schema"
PACKAGES = [*find_packages(include=["scanner", "scanner.*"]), SCHEMA_PACKAGE]
PACKAGE_DIR = {SCHEMA_PACKAGE: "schema"}
PACKAGE_DATA = {SCHEMA_PACKAGE: ["*.json"]}

if __name__ == "__main__":  # setuptools' build backend runs this file as __main__
    setup(packages=PACKAGES, package_dir=PACKAGE_DIR, package_data=PACKAGE_DATA)
