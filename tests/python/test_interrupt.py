# Ctrl-C during a call (docs/python.md, "Calls, options and threads"): the
# KeyboardInterrupt is raised by the call itself when it returns, the call
# having completed on every rank, so the next collective still pairs up.
import functools
import operator
import os
import signal
import threading
import time

import numpy as np
import pytest

from conftest import assert_elements


def test_ctrl_c_during_a_call_is_raised_when_it_returns(comm):
    if comm.size == 1:
        pytest.skip("a one-rank barrier returns at once: no call to interrupt")
    # mpirun may start ranks with SIGINT ignored; Python's own handler is the rule under test.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        if comm.rank == 0:
            waiting = threading.Event()

            def interrupt_while_waiting():
                waiting.wait()
                time.sleep(0.5)  # rank 0 is inside the barrier by now; its peers come at 3 s
                os.kill(os.getpid(), signal.SIGINT)

            sender = threading.Thread(target=interrupt_while_waiting)
            sender.start()
            # The barrier and then a C function run from C (map), with no
            # bytecode between them at which Python itself would raise the
            # pending KeyboardInterrupt: `after` stays empty only if the
            # barrier raised it when it returned.
            after = []
            with pytest.raises(KeyboardInterrupt):
                waiting.set()
                list(map(operator.call, [comm.barrier, functools.partial(after.append, "ran")]))
            sender.join()
        else:
            after = []
            time.sleep(3.0)
            comm.barrier()
        # The barrier completed on every rank: the next call pairs up (and
        # runs before any assertion, so that a failing rank 0 leaves no
        # peer waiting for it).
        x = np.full(5, comm.rank + 1, np.int64)
        comm.all_reduce(x)
        assert after == [], ("rank 0: the barrier returned normally with a Ctrl-C pending; "
                             "the KeyboardInterrupt came only later")
        assert_elements(x, np.full(5, comm.size * (comm.size + 1) // 2, np.int64), comm.rank,
                        "all_reduce after the interrupted barrier")
    finally:
        signal.signal(signal.SIGINT, previous)
