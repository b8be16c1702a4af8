"""peerpipe.Session with a loop of its own, for the co-simulation tests. Before the first call
it waits in recv(timeout=0.01) slices, counting the Timeouts. Serves one function, "f":

- f(1.0)  -> tries a second recv before answering (ValueError), and rejects with its message
- f(2.0)  -> tries a reply of 200 parts (ValueError; the client gets ERROR), then nothing more
- f(3.0)  -> the number of Timeouts counted before the first call
- f(x)    -> 2 x
"""

import numpy as np

import peerpipe

with peerpipe.Session(["f"], name="session-test") as session:
    timeouts = 0
    while True:
        try:
            call = session.recv(timeout=0.01)
            break
        except peerpipe.Timeout:
            timeouts += 1
    while call is not None:
        _, (x,) = call
        if x[0] == 1.0:
            try:
                session.recv()
            except ValueError as e:
                session.reject(str(e))
        elif x[0] == 2.0:
            try:
                session.reply(*[np.zeros(1)] * 200)
            except ValueError:
                pass
        elif x[0] == 3.0:
            session.reply(float(timeouts))
        else:
            session.reply(2.0 * x)
        call = session.recv()
    assert session.ending == "bye", session.ending
