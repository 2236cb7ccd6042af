-- PostgreSQL full-text search over the knowledge base, one row per Markdown file (document level).
CREATE TABLE docs (
  path text PRIMARY KEY,
  body text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED
);
CREATE INDEX docs_tsv ON docs USING gin (tsv);

CREATE TYPE hit AS (path text, score real);

-- Every word of the question, stemmed, joined with OR (plainto_tsquery and websearch_to_tsquery
-- join with AND: a long question would match almost nothing). Lexemes are quoted, so no question
-- is read as tsquery syntax. PostGraphile serves this as the GraphQL field search(q, lim).
CREATE FUNCTION search(q text, lim int) RETURNS SETOF hit LANGUAGE sql STABLE AS $$
  SELECT d.path, ts_rank(d.tsv, w.query)
  FROM docs d,
       (SELECT string_agg(quote_literal(lexeme), ' | ')::tsquery AS query
        FROM unnest(to_tsvector('english', q))) AS w
  WHERE d.tsv @@ w.query
  ORDER BY 2 DESC, d.path
  LIMIT lim
$$;
