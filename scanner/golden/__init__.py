"""The golden set: the queries, the documents each should find, and the file they are read from."""
