"""The reference crawlers the benchmarks measure ours against: Scrapy's spider (`scrapy_spider`, a bench-only
dependency), and seed 001's sequential robots (`sequential`: one loader with in-line retries;
`sequential_multi`: the paper's multi-process sequential robot, whose loaders re-check URLs themselves)."""
