"""The measures of one ranking against its expected documents (trec_eval's definitions where they coincide), and their aggregates."""
