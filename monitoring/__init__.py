"""HTTP-status monitoring of servers: scheduled checks, confirmed status
changes, hourly load history, uptime and maintenance windows."""
