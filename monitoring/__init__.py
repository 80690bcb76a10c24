"""HTTP-status monitoring of servers (issue 4, DESIGN.md §6): scheduled checks, confirmed status
changes, hourly load history, uptime and maintenance windows."""
