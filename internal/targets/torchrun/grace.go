package torchrun

// Main is the Python program both scripts run instead of
// `python -m torch.distributed.run`: torchrun, with its SIGKILL deadline
// set to the plan's grace period. Its first argument is the grace period in
// seconds; the rest are torchrun's.
//
// torchrun's agent answers SIGTERM, SIGINT, SIGHUP and SIGQUIT (and a failed
// worker) by sending the signal to its workers and SIGKILL `timeout` seconds
// later, in PContext.close(death_sig, timeout=30)
// (torch/distributed/elastic/multiprocessing/api.py; the agent's _shutdown
// and _stop_workers call it without a timeout). In torch 1.13, Debian's, the
// 30 s is fixed; later releases read --shutdown-timeout or
// TORCH_ELASTIC_SHUTDOWN_TIMEOUT (pytorch/pytorch#172596) but not on every
// path (pytorch/pytorch#192815). Replacing PContext.close, which every path
// goes through, makes the grace period hold on every version: a worker
// saving a checkpoint on the preemption warning gets all of it.
const Main = `import sys
from torch.distributed.elastic.multiprocessing import api

grace = float(sys.argv.pop(1))
close = api.PContext.close


def close_after_grace(self, death_sig=None, timeout=None):
    return close(self, death_sig, grace)


api.PContext.close = close_after_grace
from torch.distributed.run import main  # noqa: E402

sys.argv[0] = "torchrun"
main()
`
