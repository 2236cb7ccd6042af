"""The built-in search: text analysis, BM25F postings, the index, the query compiler."""
