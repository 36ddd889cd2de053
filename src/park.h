/* park.h: the parking lot for connections that wait for their next request.
 * A handler thread that would block waiting for the first byte of a request
 * (an idle keep-alive connection, or a fresh one with nothing sent yet) parks
 * the socket here and goes back to the pool; one park thread watches every
 * parked socket and hands it back to the depot when bytes arrive, or closes
 * it when its timeout passes.  Idle connections thus cost a slot, not a
 * thread: thousands of them do not exhaust the handler pool. */
#ifndef COWD_PARK_H
#define COWD_PARK_H

#include "depot.h"

/* slots: most connections parked at once (they also count against
 * --max-connections); longest_timeout: the longest timeout a connection
 * will be parked with (seconds: the lot's tables span it).  0, or -1
 * (logged). */
int park_init(struct depot *d, unsigned slots, unsigned longest_timeout);

/* Parks conn->fd until readable or `timeout` seconds pass; when readable,
 * *conn goes back to the depot as it is (parked_before set, queued the time
 * of the wake).  0 when parked (the lot owns fd now), -1 when the lot is full
 * or unavailable (the caller keeps fd and waits itself).
 * conn->parked_before: the lot handed this connection back before, so
 * re-parking it costs one re-arm, not add + delete.  conn->idle.since: when
 * the wait for its request began (the timeout counts from then);
 * conn->idle.seq: a counter taken then, which orders connections by how long
 * they have been idle (park_close_oldest). */
int park_connection(const struct depot_conn *conn, unsigned timeout);

/* Closes the connection idle longest (quietly, as at its timeout): 1, or 0
 * if none is parked.  For an accept at --max-connections.  Exact but for a
 * connection parked again (woken by empty lines) behind more than 64 of its
 * second: it then counts as a little younger. */
int park_close_oldest(void);

/* Graceful stop: close every parked connection now. */
void park_close_all(void);
unsigned park_count(void);

/* Parked slots stepped over so far to find where a connection goes in its
 * timeout's expiry order: the cost of parking beyond a constant. */
unsigned long park_steps(void);

#endif
