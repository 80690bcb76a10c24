"""testweb.ports.free_port chooses ports no outgoing connection can be given: a server started on one after
other connections were made still binds it (test_deploy's gunicorn once found its port taken)."""

from __future__ import annotations

import socket

from testweb.ports import ephemeral_low, free_port


def test_outgoing_connections_take_their_ports_where_the_kernels_free_ports_come_from():
    # What went wrong: a port from bind-to-0 lies in the range an outgoing connection's local port comes from.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname(), timeout=5) as client:
            local = client.getsockname()[1]
            # Accepted here, not by a thread: a thread's accept could run after the listener closed (EBADF).
            listener.accept()[0].close()
        assert local >= ephemeral_low()
        assert listener.getsockname()[1] >= ephemeral_low()


def test_free_ports_lie_below_that_range_and_can_be_bound():
    ports = {free_port() for _ in range(20)}
    assert all(1024 < p < ephemeral_low() for p in ports)
    assert len(ports) > 1  # chosen at random, not one fixed port
    port = free_port("127.0.1.7")
    with socket.socket() as s:
        s.bind(("127.0.1.7", port))
        s.listen()


def test_a_port_already_bound_is_not_given():
    taken = []
    try:
        for _ in range(50):
            s = socket.socket()
            port = free_port()
            s.bind(("127.0.0.1", port))
            taken.append(s)
        assert len({s.getsockname()[1] for s in taken}) == 50
    finally:
        for s in taken:
            s.close()
