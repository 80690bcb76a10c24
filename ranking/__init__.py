"""Converting and ranking (seed 003): dense site, domain, community and page IDs,
PageRank and BlockRank over the link graph, and the Django side that reads the graph from the
database in bulk and stores each page's rank.

The algorithms (`convert`, `pagerank`, `blockrank`, `edges`) import neither Django nor Celery."""
