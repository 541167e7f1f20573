#!/bin/sh
# Runs PROGRAM with the launcher variables a library might be tempted to
# read for its local rank and node set to wrong values (every one at least
# 5, while a true local rank here is below 4, and a node id one past the
# rank), different on every rank. Used by launcher_variables_test.
#
#   misleading_launcher_env.sh PROGRAM [ARGS...]
set -eu
# The world rank only makes the values differ between ranks (Open MPI
# exports OMPI_COMM_WORLD_RANK, MPICH's Hydra PMI_RANK).
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
wrong=$((rank + 5))
export COLLECTIVE_TEST_MISLEADING_LAUNCHER=1
export OMPI_COMM_WORLD_LOCAL_RANK=$wrong OMPI_COMM_WORLD_NODE_RANK=$wrong
export OMPI_COMM_WORLD_LOCAL_SIZE=9
export SLURM_LOCALID=$((wrong + 2)) SLURM_NODEID=$((rank + 1)) SLURM_TASKS_PER_NODE=9
export MPI_LOCALRANKID=$wrong MPI_LOCALNRANKS=9
export LOCAL_RANK=$wrong LOCAL_SIZE=9
exec "$@"
