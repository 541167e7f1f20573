"""torch.distributed backend "collective" (docs/python.md, "torch.distributed").

``import collective.torch`` registers the backend; then, under mpirun::

    import torch.distributed as dist
    import collective.torch  # noqa: F401
    dist.init_process_group("collective")

Where RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are not set (plain
mpirun), the import sets them from MPI (rank 0's host and a free port, sent
to every rank), so the env:// rendezvous torch does for every backend works.
The process group serves CPU tensors (float16, bfloat16, float32, float64,
int8, uint8, int32, int64), contiguous, in place without a copy: a call torch
waits for at once through the library's blocking call, any other through its
`_async` call; anything else raises naming the backend and the operation.
"""

import collections
import os
import socket
import sys
import threading

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup as _ProcessGroup
from torch._C._distributed_c10d import ReduceOp as _ReduceOp
from torch._C._distributed_c10d import Work as _TorchWork
from torch._C._distributed_c10d import _create_work_from_future

import collective

BACKEND = "collective"

_OPS = {_ReduceOp.SUM: "sum", _ReduceOp.MIN: "min", _ReduceOp.MAX: "max", _ReduceOp.PRODUCT: "prod",
        _ReduceOp.BAND: "band", _ReduceOp.BOR: "bor", _ReduceOp.BXOR: "bxor"}
if hasattr(_ReduceOp, "AVG"):
    _OPS[_ReduceOp.AVG] = "mean"
# Keyed by the op's number: hashing torch's ReduceOp runs Python code (µs a call).
_OPS_BY_VALUE = {op.op.value: name for op, name in _OPS.items()}

# torch dtype -> (numpy view dtype, library dtype name or None to infer)
_TYPES = {
    torch.float16: (torch.float16, None),
    torch.bfloat16: (torch.int16, "bfloat16"),
    torch.float32: (torch.float32, None),
    torch.float64: (torch.float64, None),
    torch.int8: (torch.int8, None),
    torch.uint8: (torch.uint8, None),
    torch.int32: (torch.int32, None),
    torch.int64: (torch.int64, None),
}


class BackendError(RuntimeError):
    """A call the "collective" backend does not serve, or bad arguments."""


def _refuse(operation, rank, why):
    raise BackendError(f"torch.distributed backend '{BACKEND}': {operation} (rank {rank}): {why}")


def _buffer(tensor, operation, rank, argument):
    """The tensor's memory as a numpy array (no copy), and the dtype to declare."""
    if not isinstance(tensor, torch.Tensor):
        _refuse(operation, rank, f"{argument} is a {type(tensor).__name__}, not a tensor")
    if not tensor.is_cpu:
        _refuse(operation, rank, f"{argument} is on {tensor.device}; this backend serves CPU tensors")
    types = _TYPES.get(tensor.dtype)
    if types is None:
        _refuse(operation, rank, f"{argument} has dtype {tensor.dtype}, which it does not reduce "
                "(float16, bfloat16, float32, float64, int8, uint8, int32, int64)")
    if not tensor.is_contiguous():
        _refuse(operation, rank, f"{argument} is not contiguous (pass tensor.contiguous())")
    view_type, declared = types
    # Each step only where needed: together they cost more than a small call (µs each).
    if tensor.requires_grad:
        tensor = tensor.detach()
    if view_type is not tensor.dtype:
        tensor = tensor.view(view_type)
    return tensor.numpy(), declared


def _copy_out(flat, outputs):
    """Copies consecutive blocks of `flat` into the tensors `outputs`, each its own size."""
    offset = 0
    for out in outputs:
        n = out.numel()
        out.copy_(flat[offset:offset + n].view_as(out))
        offset += n


def _same_dtype(tensors, operation, rank):
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        _refuse(operation, rank, f"the tensors have different dtypes {sorted(map(str, dtypes))}")


class _Completer:
    """Completes the torch futures of the library's calls in flight, so that nothing blocks the
    caller: a thread waits (GIL released) on the calls in the order they were started and sets
    each future, which runs the future's callbacks (`then`) on that thread.

    A callback may itself wait for another call's future (DDP's PowerSGD hook starts an
    all_reduce in its callback and waits for it): the thread running it cannot complete that
    future. So a thread inside callbacks stops serving the queue: if calls are queued then, or
    one is started meanwhile, another thread serves them; a thread with nothing to serve while
    another serves ends. Without callbacks that wait, one thread does everything."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ready = threading.Condition(self._lock)
        self._items = collections.deque()
        self._serving = 0  # threads taking items, not inside callbacks
        with self._lock:
            self._start_thread()

    def _start_thread(self):  # the lock held
        self._serving += 1
        threading.Thread(target=self._run, name="collective.torch", daemon=True).start()

    def submit(self, works, future, result, after):
        with self._lock:
            self._items.append((works, future, result, after))
            if self._serving == 0:  # every thread is inside callbacks
                self._start_thread()
            else:
                self._ready.notify()

    def _run(self):
        while True:
            with self._lock:
                while not self._items:
                    if self._serving > 1:  # another thread serves
                        self._serving -= 1
                        return
                    self._ready.wait()
                works, future, result, after = self._items.popleft()
            error = None
            try:
                for work in works:
                    work.wait()
                if after is not None:
                    after()
            except BaseException as raised:  # raised by the torch Work's wait()
                error = raised
            with self._lock:
                self._serving -= 1
                if self._items and self._serving == 0:
                    self._start_thread()
            try:
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(result)
            finally:
                with self._lock:
                    self._serving += 1


_COMPLETER = None


def _work(works, result, after=None, python_caller=False):
    """A torch Work (C++, so DDP's reducer may hold and wait on it) completed when the library's
    calls `works` finished: torch's future-backed Work, its future set by the completer thread."""
    global _COMPLETER
    future = torch.futures.Future()
    if all(work.is_completed() for work in works):  # finished already
        try:
            for work in works:
                work.wait()
            if after is not None:
                after()
        except BaseException as error:
            future.set_exception(error)
        else:
            future.set_result(result)
    else:
        if _COMPLETER is None:
            _COMPLETER = _Completer()
        _COMPLETER.submit(works, future, result, after)
    if python_caller:
        return _PythonWork(future, result)
    return _create_work_from_future(future)


class _Done:
    """The Work returned to a caller that waits at once (the blocking path of _issue): complete
    before it is returned, and dropped by torch.distributed right after its wait(), so one
    object serves every such call."""
    work = None


def _done():
    if _Done.work is None:
        future = torch.futures.Future()
        future.set_result([])
        _Done.work = _PythonWork(future, [])
    return _Done.work


def _issue(blocking, started, result, *args, after=None, **kwargs):
    """Runs one library call for a process-group method: blocking when torch.distributed's Python
    function called the method with async_op=False, started (`_async`) otherwise.

    A caller with async_op=False waits on the Work at once; the library's blocking call (GIL
    released) gives it the same result and errors with no thread hand-off, where the `_async`
    call crosses to the progress thread and its completion back (tens of µs on a small call:
    docs/python.md, "torch.distributed"). Async callers and C++ callers (DDP's reducer) get the
    `_async` call and a Work that completes on its own."""
    caller = _caller_frame()
    python_caller = caller is not None and caller.f_globals.get("__name__") == _C10D
    if python_caller and _waits_at_once(caller):
        blocking(*args, **kwargs)
        if after is not None:
            after()
        return _done()
    return _work([started(*args, **kwargs)], result, after, python_caller)


_C10D = "torch.distributed.distributed_c10d"


def _waits_at_once(caller):
    """Whether torch.distributed's function `caller` waits on the Work as soon as it has it:
    dist.send and dist.recv always (isend and irecv never), the others when async_op is False."""
    if caller.f_code.co_name in ("send", "recv"):
        return True
    return caller.f_locals.get("async_op") is False


class _PythonWork(_TorchWork):
    """The Work handed to torch.distributed's Python functions (dist.all_reduce, ...): its wait()
    raises the call's error. torch 1.13's future-backed C++ Work returns from wait() without
    raising when its future failed, so it serves only the C++ callers (DDP's reducer), which
    read the future, where the error is raised."""

    def __init__(self, future, result):
        super().__init__()
        self._future = future
        self._result = result

    def wait(self, timeout=None):
        self._future.wait()  # raises the call's error
        return True

    def is_completed(self):
        return self._future.done()

    def is_success(self):
        if not self._future.done():
            return False
        try:
            self._future.value()
        except Exception:
            return False
        return True

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        return self._future


def _caller_frame():
    """The frame of the code that called the process group's method (_caller_frame <- _issue <-
    the method <- its caller), or None when C++ called it on a thread of its own. The methods
    answer torch.distributed's Python functions (dist.all_reduce, ...), which keep the Work's
    Python object while they use it and wait at once when async_op is False; a C++ caller (DDP's
    reducer through the PyProcessGroup trampoline) may hold the Work after its Python object is
    gone, when a Python override can no longer be reached: it gets the C++ Work."""
    try:
        return sys._getframe(3)
    except ValueError:
        return None


class ProcessGroupCollective(_ProcessGroup):
    """torch's ProcessGroup served by a libcollective Communicator (a duplicate of MPI's world)."""

    def __init__(self, store, rank, size, timeout):
        super().__init__(rank, size)
        if not dist.is_initialized():
            # The default group: every rank of MPI's world, in its order.
            self._comm = collective.Communicator.world()
            if (self._comm.rank, self._comm.size) != (rank, size):
                raise BackendError(
                    f"torch.distributed backend '{BACKEND}': init_process_group (rank {self._comm.rank}): "
                    f"torch says rank {rank} of {size} but MPI says rank {self._comm.rank} of "
                    f"{self._comm.size}; launch under mpirun with RANK and WORLD_SIZE unset or equal to MPI's")
        else:
            self._comm = _group_communicator(store, rank, size)
        self._timeout = timeout.total_seconds() if timeout else None
        # Settable on the group (dist.group.WORLD.deterministic = True): the reductions
        # (all_reduce, reduce, reduce_scatter*) add in rank order, so that their results do not
        # depend on the algorithm; all_reduce_algorithm forces all_reduce's (the C++ names).
        self.deterministic = False
        self.all_reduce_algorithm = "auto"

    def getBackendName(self):
        return BACKEND

    def _get_backend_name(self):
        return BACKEND

    # --- helpers -----------------------------------------------------------------------------
    def _one(self, tensors, operation):
        if len(tensors) != 1:
            _refuse(operation, self.rank(), f"takes one tensor per rank, not {len(tensors)}")
        return tensors[0]

    def _op(self, op, operation):
        kind = getattr(op, "op", op)  # a ReduceOp holds its RedOpType
        name = _OPS_BY_VALUE.get(getattr(kind, "value", None))
        if name is None:
            served = ", ".join(sorted(getattr(o.op, "name", str(o)) for o in _OPS))
            _refuse(operation, self.rank(),
                    f"reduce op {getattr(kind, 'name', kind)} is not served ({served})")
        return name

    def _opts(self):
        return {} if self._timeout is None else {"timeout": self._timeout}

    # --- collectives -------------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        operation = "all_reduce"
        tensor = self._one(tensors, operation)
        op = self._op(opts.reduceOp if opts is not None else _ReduceOp.SUM, operation)
        array, dtype = _buffer(tensor, operation, self.rank(), "tensor")
        return _issue(self._comm.all_reduce, self._comm.all_reduce_async, tensors, array, op=op,
                      dtype=dtype, deterministic=self.deterministic,
                      algorithm=self.all_reduce_algorithm, **self._opts())

    def broadcast(self, tensors, opts=None):
        operation = "broadcast"
        tensor = self._one(tensors, operation)
        root = opts.rootRank if opts is not None else 0
        array, dtype = _buffer(tensor, operation, self.rank(), "tensor")
        return _issue(self._comm.broadcast, self._comm.broadcast_async, tensors, array, root=root,
                      dtype=dtype, **self._opts())

    def reduce(self, tensors, opts=None):
        operation = "reduce"
        tensor = self._one(tensors, operation)
        op = self._op(opts.reduceOp, operation)
        array, dtype = _buffer(tensor, operation, self.rank(), "tensor")
        return _issue(self._comm.reduce, self._comm.reduce_async, tensors, array,
                      root=opts.rootRank, op=op, dtype=dtype, deterministic=self.deterministic,
                      **self._opts())

    def barrier(self, opts=None):
        return _issue(self._comm.barrier, self._comm.barrier_async, [], **self._opts())

    def _allgather_base(self, output, input, opts=None):
        operation = "all_gather_into_tensor"
        _same_dtype([output, input], operation, self.rank())
        send, dtype = _buffer(input, operation, self.rank(), "input")
        recv, _ = _buffer(output, operation, self.rank(), "output")
        return _issue(self._comm.all_gather, self._comm.all_gather_async, [output], send, recv,
                      dtype=dtype, **self._opts())

    def allgather(self, output_lists, input_tensors, opts=None):
        operation = "all_gather"
        tensor = self._one(input_tensors, operation)
        if len(output_lists) != 1 or len(output_lists[0]) != self.size():
            _refuse(operation, self.rank(), f"needs one list of {self.size()} output tensors")
        outputs = output_lists[0]
        self._same_shape(outputs, tensor, operation, "output")
        send, dtype = _buffer(tensor, operation, self.rank(), "input")
        # The outputs are separate tensors: gathered into one buffer, then copied out
        # (all_gather_into_tensor is the zero-copy form).
        flat = torch.empty(self.size() * tensor.numel(), dtype=tensor.dtype)
        recv, _ = _buffer(flat, operation, self.rank(), "output")
        return _issue(self._comm.all_gather, self._comm.all_gather_async, output_lists, send, recv,
                      dtype=dtype, after=lambda: _copy_out(flat, outputs), **self._opts())

    def _reduce_scatter_base(self, output, input, opts=None):
        operation = "reduce_scatter_tensor"
        _same_dtype([output, input], operation, self.rank())
        op = self._op(opts.reduceOp if opts is not None else _ReduceOp.SUM, operation)
        send, dtype = _buffer(input, operation, self.rank(), "input")
        recv, _ = _buffer(output, operation, self.rank(), "output")
        return _issue(self._comm.reduce_scatter, self._comm.reduce_scatter_async, [output], send,
                      recv, op=op, dtype=dtype, deterministic=self.deterministic, **self._opts())

    def reduce_scatter(self, output_tensors, input_lists, opts=None):
        operation = "reduce_scatter"
        output = self._one(output_tensors, operation)
        if len(input_lists) != 1 or len(input_lists[0]) != self.size():
            _refuse(operation, self.rank(), f"needs one list of {self.size()} input tensors")
        inputs = input_lists[0]
        _same_dtype([output, *inputs], operation, self.rank())
        for q, t in enumerate(inputs):
            if t.numel() != output.numel():
                _refuse(operation, self.rank(), f"input {q} holds {t.numel()} elements but the "
                        f"output {output.numel()}")
        op = self._op(opts.reduceOp, operation)
        # Separate input tensors: packed into one send buffer (a copy; reduce_scatter_tensor
        # is the zero-copy form).
        flat = torch.cat([t.reshape(-1) for t in inputs]) if inputs else torch.empty(0, dtype=output.dtype)
        send, dtype = _buffer(flat, operation, self.rank(), "input")
        recv, _ = _buffer(output, operation, self.rank(), "output")
        return _issue(self._comm.reduce_scatter, self._comm.reduce_scatter_async, output_tensors,
                      send, recv, op=op, dtype=dtype, deterministic=self.deterministic,
                      after=lambda: flat, **self._opts())

    def gather(self, output_tensors, input_tensors, opts=None):
        operation = "gather"
        tensor = self._one(input_tensors, operation)
        root = opts.rootRank if opts is not None else 0
        send, dtype = _buffer(tensor, operation, self.rank(), "input")
        if self.rank() != root:
            if output_tensors:
                _refuse(operation, self.rank(), f"takes no output list off the root (rank {root})")
            return _issue(self._comm.gather, self._comm.gather_async, output_tensors, send, None,
                          root=root, dtype=dtype, **self._opts())
        if len(output_tensors) != 1 or len(output_tensors[0]) != self.size():
            _refuse(operation, self.rank(), f"needs one list of {self.size()} output tensors on the root")
        outputs = output_tensors[0]
        self._same_shape(outputs, tensor, operation, "output")
        # The outputs are separate tensors: gathered into one buffer, then copied out.
        flat = torch.empty(self.size() * tensor.numel(), dtype=tensor.dtype)
        recv, _ = _buffer(flat, operation, self.rank(), "output")
        return _issue(self._comm.gather, self._comm.gather_async, output_tensors, send, recv,
                      root=root, dtype=dtype, after=lambda: _copy_out(flat, outputs), **self._opts())

    def scatter(self, output_tensors, input_tensors, opts=None):
        operation = "scatter"
        tensor = self._one(output_tensors, operation)
        root = opts.rootRank if opts is not None else 0
        recv, dtype = _buffer(tensor, operation, self.rank(), "output")
        if self.rank() != root:
            if input_tensors:
                _refuse(operation, self.rank(), f"takes no input list off the root (rank {root})")
            return _issue(self._comm.scatter, self._comm.scatter_async, output_tensors, None, recv,
                          root=root, dtype=dtype, **self._opts())
        if len(input_tensors) != 1 or len(input_tensors[0]) != self.size():
            _refuse(operation, self.rank(), f"needs one list of {self.size()} input tensors on the root")
        inputs = input_tensors[0]
        self._same_shape(inputs, tensor, operation, "input")
        # Separate input tensors: packed into one send buffer (a copy).
        flat = torch.cat([t.reshape(-1) for t in inputs])
        send, _ = _buffer(flat, operation, self.rank(), "input")
        return _issue(self._comm.scatter, self._comm.scatter_async, output_tensors, send, recv,
                      root=root, dtype=dtype, after=lambda: flat, **self._opts())

    def alltoall(self, output_tensors, input_tensors, opts=None):
        operation = "all_to_all"
        p = self.size()
        if len(output_tensors) != p or len(input_tensors) != p:
            _refuse(operation, self.rank(), f"needs {p} output and {p} input tensors, not "
                    f"{len(output_tensors)} and {len(input_tensors)}")
        _same_dtype([*output_tensors, *input_tensors], operation, self.rank())
        # Tensor q goes to rank q, each its own size (all_to_all_v): packed into one send buffer
        # and received into one buffer, then copied out (all_to_all_single is the zero-copy form).
        flat_in = torch.cat([t.reshape(-1) for t in input_tensors])
        flat_out = torch.empty(sum(t.numel() for t in output_tensors), dtype=flat_in.dtype)
        send, dtype = _buffer(flat_in, operation, self.rank(), "input")
        recv, _ = _buffer(flat_out, operation, self.rank(), "output")
        send_counts = [t.numel() for t in input_tensors]
        recv_counts = [t.numel() for t in output_tensors]
        return _issue(self._comm.all_to_all_v, self._comm.all_to_all_v_async, output_tensors, send,
                      send_counts, None, recv, recv_counts, None, dtype=dtype,
                      after=lambda: _copy_out(flat_out, output_tensors), **self._opts())

    def _same_shape(self, tensors, like, operation, argument):
        for q, t in enumerate(tensors):
            if t.numel() != like.numel() or t.dtype != like.dtype:
                _refuse(operation, self.rank(), f"{argument} {q} is {t.dtype} x {t.numel()} but the "
                        f"rank's own tensor is {like.dtype} x {like.numel()}")

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        operation = "all_to_all_single"
        _same_dtype([output, input], operation, self.rank())
        send, dtype = _buffer(input, operation, self.rank(), "input")
        recv, _ = _buffer(output, operation, self.rank(), "output")
        p = self.size()
        if not output_split_sizes and not input_split_sizes:
            if send.size % p or recv.size != send.size:
                _refuse(operation, self.rank(), f"input ({send.size}) and output ({recv.size}) must "
                        f"hold the same multiple of {p} elements")
            return _issue(self._comm.all_to_all, self._comm.all_to_all_async, [output], send, recv,
                          dtype=dtype, **self._opts())
        row = 1
        for d in (input.shape[1:] if input.dim() > 1 else ()):
            row *= d
        send_counts = [s * row for s in input_split_sizes] if input_split_sizes else [send.size // p] * p
        recv_counts = [s * row for s in output_split_sizes] if output_split_sizes else [recv.size // p] * p
        return _issue(self._comm.all_to_all_v, self._comm.all_to_all_v_async, [output], send,
                      send_counts, None, recv, recv_counts, None, dtype=dtype, **self._opts())

    def send(self, tensors, dst, tag):
        operation = "send"
        tensor = self._one(tensors, operation)
        array, dtype = _buffer(tensor, operation, self.rank(), "tensor")
        # Synchronous, as the library's send: its Work completes once dst's recv accepted it.
        return _issue(self._comm.send, self._comm.send_async, tensors, array, dst, tag=tag,
                      dtype=dtype, **self._opts())

    def recv(self, tensors, src, tag):
        operation = "recv"
        tensor = self._one(tensors, operation)
        array, dtype = _buffer(tensor, operation, self.rank(), "tensor")
        return _issue(self._comm.recv, self._comm.recv_async, tensors, array, src, tag=tag,
                      dtype=dtype, **self._opts())

    # --- not served --------------------------------------------------------------------------
    def _not_served(name):
        def refuse(self, *args, **kwargs):
            _refuse(name, self.rank(), "is not served by this backend")
        refuse.__name__ = name
        return refuse

    allreduce_coalesced = _not_served("allreduce_coalesced")
    allgather_coalesced = _not_served("allgather_coalesced")
    recv_anysource = _not_served("recv_anysource")
    monitored_barrier = _not_served("monitored_barrier")
    del _not_served


# MPI's world, made at import, where every rank is: the parent of every
# group's communicator but the default group's, and used for nothing else.
_parent = None


def _world_parent():
    global _parent
    if _parent is None:
        _parent = collective.Communicator.world()
    return _parent


def _group_communicator(store, rank, size):
    """A group made by new_group: torch creates it on its members only, with its own store.

    The members learn each other's world ranks through that store (the creator is not told them),
    then make the group's communicator among themselves (Communicator.subset), which the ranks
    left out never call.
    """
    parent = _world_parent()
    if not 0 <= rank < size <= parent.size:
        raise BackendError(
            f"torch.distributed backend '{BACKEND}': new_group (world rank {parent.rank}): "
            f"torch says rank {rank} of {size} but MPI says rank {parent.rank} of {parent.size}; "
            f"a group has at most MPI's ranks")
    if size == parent.size:
        # Every rank is a member (new_group() or new_group(all ranks)), in the world's order.
        comm = collective.Communicator.world()
    else:
        store.set(f"collective/world_rank/{rank}", str(parent.rank))
        members = [int(store.get(f"collective/world_rank/{q}")) for q in range(size)]
        comm = parent.subset(members)
    if (comm.rank, comm.size) != (rank, size):
        raise BackendError(
            f"torch.distributed backend '{BACKEND}': new_group (world rank {parent.rank}): "
            f"torch says rank {rank} of {size} but the group's communicator has rank {comm.rank} of "
            f"{comm.size}")
    return comm


def _rendezvous_from_mpi():
    """Sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from MPI where they are unset."""
    names = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
    if all(name in os.environ for name in names):
        return
    import numpy as np
    comm = _world_parent()
    message = np.zeros(256, np.uint8)  # port (2 bytes) then rank 0's host name
    if comm.rank == 0:
        with socket.socket() as probe:
            probe.bind(("", 0))
            port = probe.getsockname()[1]
        host = (os.environ.get("MASTER_ADDR") or collective.host_name()).encode()[:250]
        message[0], message[1] = port >> 8, port & 0xFF
        message[2:2 + len(host)] = np.frombuffer(host, np.uint8)
    comm.broadcast(message, root=0)
    host = bytes(message[2:]).rstrip(b"\0").decode()
    os.environ.setdefault("RANK", str(comm.rank))
    os.environ.setdefault("WORLD_SIZE", str(comm.size))
    os.environ.setdefault("MASTER_ADDR", host)
    os.environ.setdefault("MASTER_PORT", str((int(message[0]) << 8) | int(message[1])))


def _create(store, rank, size, timeout):
    return ProcessGroupCollective(store, rank, size, timeout)


if BACKEND.upper() not in dist.Backend._plugins:
    dist.Backend.register_backend(BACKEND, _create)
_rendezvous_from_mpi()
# The parent of the groups, made here where every rank is (the rendezvous made it already unless
# torch's variables were set): a group whose default group is another backend's (gloo) needs it.
_world_parent()
