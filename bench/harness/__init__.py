"""What the benchmarks share, so each benchmark holds only its own experiment.

- `db`: a fresh PostgreSQL database (the cluster harness's, testweb.cluster, which the integration tests use
  too), `manage.py` in it, bulk loading with COPY.
- `services`: a private redis-server, our own nginx's binary, waiting for celery workers to answer.
- `proc`: CPU and memory of processes and process trees from /proc, the machine's busy time, the time
  threads waited for a CPU, and the load average every benchmark prints beside its figures.

Benchmarks print figures; tests assert behaviour.
"""
