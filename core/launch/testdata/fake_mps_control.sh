#!/bin/sh
# A stand-in for nvidia-cuda-mps-control, for tests only. "-f" is the daemon
# in the foreground: it makes the control pipe and waits for a client to say
# quit; "-d" starts that daemon detached and returns. With no argument it is the client: one command from stdin. Every call
# is appended to $FAKE_MPS_LOG; with FAKE_MPS_FAIL set the daemon fails at
# once, as a real one does on a machine where MPS cannot start.
log=${FAKE_MPS_LOG:-/dev/null}
pipe=${CUDA_MPS_PIPE_DIRECTORY:?CUDA_MPS_PIPE_DIRECTORY is not set}
if [ "${1:-}" = "-d" ]; then
  # The daemon mode: the same daemon, detached; returns at once, as the real
  # one does.
  echo "daemon -d" >>"$log"
  if [ -n "${FAKE_MPS_FAIL:-}" ]; then
    echo "fake: cannot open the GPU" >&2
    exit 1
  fi
  ("$0" -f </dev/null >/dev/null 2>&1 &)
  exit 0
fi
if [ "${1:-}" = "-f" ]; then
  echo "daemon start pipe=$pipe log=${CUDA_MPS_LOG_DIRECTORY:-unset} token=${DDP_LAUNCHER_TOKEN:+set}" >>"$log"
  if [ -n "${FAKE_MPS_FAIL:-}" ]; then
    echo "fake: cannot open the GPU" >&2
    exit 1
  fi
  : >"$pipe/control"
  while [ ! -e "$pipe/quit" ]; do sleep 0.05; done
  rm -f "$pipe/quit"
  # The real daemon leaves its control socket behind and says in its log
  # that it exited; FAKE_MPS_KEEP_PIPE does the same.
  if [ -n "${FAKE_MPS_KEEP_PIPE:-}" ]; then
    echo "[fake] Exit with status 0" >>"${CUDA_MPS_LOG_DIRECTORY:?}/control.log"
  else
    rm -f "$pipe/control"
  fi
  echo "daemon quit" >>"$log"
  exit 0
fi
read -r cmd
echo "client $cmd" >>"$log"
if [ "$cmd" = quit ]; then : >"$pipe/quit"; fi
