"""The knowledge base at a git revision, read with dulwich (the only package that imports it)."""
