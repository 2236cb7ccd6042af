-- One row per Markdown file of the knowledge base: a document-level index (no headings),
-- scored by kb-eval with --score-level document.
CREATE VIRTUAL TABLE docs USING fts5(path UNINDEXED, body, tokenize = 'porter unicode61');
