"""Services: every write to the crawl's tables goes through a named function here."""
