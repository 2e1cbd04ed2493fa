"""A background thread iterates the loader and fills a queue; the main
thread trains from the queue (a hand-made prefetcher, as many repos have)."""
import queue
import threading

from ._common import data, ddp, loss_fn, mlp, sgd, shape, sharded

SRC = "issue 70"


@shape("prefetch_thread", SRC)
def run(rank, world, inject):
    loader = sharded(data(64), batch=8)
    model = ddp(mlp())
    opt = sgd(model)
    for epoch in range(2):
        loader.sampler.set_epoch(epoch)
        q = queue.Queue(maxsize=2)

        def fill():
            for batch in loader:
                q.put(batch)
            q.put(None)
        threading.Thread(target=fill, daemon=True).start()
        while True:
            batch = q.get()
            if batch is None:
                break
            opt.zero_grad()
            loss_fn(model(batch[0]), batch[1]).backward()
            opt.step()
