"""Shared by the PyTorch DDP benchmarks: ranks launched by mpirun (Debian's torchrun is broken on
Python 3.11) joined into a gloo process group, with the same thread settings as ddptrain's ranks.
"""
import os

import torch
import torch.distributed as dist


def env_int(names, default):
    """The first of the environment variables `names` that is set, as an int; else `default`."""
    for n in names:
        v = os.environ.get(n)
        if v is not None and v != "":
            return int(v)
    return default


def rank_and_world():
    """This process's rank and the world size, from Open MPI's (or PMI's, or torch's) variables."""
    return (env_int(["OMPI_COMM_WORLD_RANK", "PMI_RANK", "RANK"], 0),
            env_int(["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "WORLD_SIZE"], 1))


def set_threads(threads):
    """`threads` intra-op threads and one inter-op thread per rank."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass


def init_gloo(rank, world, port, default_port):
    """Joins the gloo group at $MASTER_ADDR (default 127.0.0.1), port `port` or $MASTER_PORT or
    `default_port`."""
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = port if port is not None else env_int(["MASTER_PORT"], default_port)
    dist.init_process_group(backend="gloo", init_method="tcp://%s:%d" % (addr, port), rank=rank,
                            world_size=world)
