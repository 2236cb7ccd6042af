-- Reads the question from the temporary table q (text, lim) that the command's first argument
-- fills with {query_sql}: the question is never pasted into this SQL.
-- Each word becomes an FTS5 string ("it's" -> "it's"), joined with OR, so no question can be read
-- as FTS5 syntax (C++, AND, a lone quote, a parenthesis) and every word counts, as in BM25.
WITH RECURSIVE split(word, rest) AS (
  SELECT '', (SELECT text FROM q) || ' '
  UNION ALL
  SELECT substr(rest, 1, instr(rest, ' ') - 1), substr(rest, instr(rest, ' ') + 1)
  FROM split WHERE rest <> ''
)
SELECT path, -bm25(docs) AS score
FROM docs
WHERE docs MATCH (
  SELECT group_concat('"' || replace(word, '"', '""') || '"', ' OR ') FROM split WHERE word <> ''
)
ORDER BY bm25(docs), path
LIMIT (SELECT lim FROM q);
