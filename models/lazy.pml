/*
 * lazy.pml - LAZY (src/bell.c): a watched instance may leave its doorbell
 * rung after its last ready item went, while nothing needs its level exact
 * (no edge-triggered or one-shot nesting, none that something outside
 * uepoll polls: bell__nedge, bell__nexact).  A nesting that does need it is
 * counted (bell__nexact) before the look that makes the levels exact
 * (krec__exact_hold in src/krec.c: bell_exact, then BELL_LOOK_EXACT, i.e.
 * bell__unstale), and the kernel call that registers it polls them after
 * that; a read that empties a source looks at its watched instances only
 * while a count is non-zero (bell_any_exact; BELL_LOOK_CHANGED: bell__mirror
 * unless bell__lazy).  For the spin model checker.
 *
 * Checked exhaustively: when the kernel's call polls the inner instance
 * (the ADD of a one-shot holder, which would be disarmed by a report our
 * check then drops), its doorbell's eventfd is non-zero only if the item's
 * source shows something, or a read that emptied it is still on its way,
 * or a ring made for the item wrote after the read took it (both the "one
 * moment" WATCHED leaves in every mode); never a level LAZY left.  The inner instance holds one
 * ueventfd, ready, queued and rung when the model starts (an event that
 * came before); a reader empties it while the holder's ctl runs, and a
 * lazy waiter (a holder's check or a wait that finds nothing) may look at
 * any time.
 *
 * State, as in bell.c:
 *   rdy      the source shows something (the ueventfd's counter)
 *   q        the item is queued
 *   db_set   bell.set; db_cnt the doorbell's eventfd is non-zero (the level
 *            the kernel's poll of the instance's fd sees)
 *   dblock   bell.dblock: a ring's `set` = 1 and write, a take's read and
 *            `set` = 0, each one step for the other
 *   nexact   bell__nexact
 *   rflight  ghost: the reader emptied the source and has not finished
 *   late     ghost: a ring decided while the source showed something wrote
 *            after the reader emptied it (WATCHED's "what stays": the
 *            level is left for the next look, in every mode; not LAZY's)
 * models/check.sh runs it, and each mutant, which must fail:
 *   MUTANT_EXACT_COUNT_LATE  the ctl counts its nesting after the kernel
 *                            call instead of before its look (a read in
 *                            between is lazy, and the call polls its stale
 *                            level)
 *   MUTANT_EXACT_NO_LOOK     the ctl counts but does not look (a level left
 *                            stale before the count is polled)
 *   MUTANT_EXACT_LOOK_FIRST  the look before the count (a read between
 *                            them is lazy, and nobody takes its level)
 */
bit rdy = 1;
bit q = 1;
bit db_set = 1;
bit db_cnt = 1;
bit dblock;
byte nexact;
bit rflight;
bit late;
bit polled;

inline lock() {
	atomic { dblock == 0 -> dblock = 1 }
}

inline unlock() {
	dblock = 0
}

/* bell__kick: test, then under dblock exchange and write(2). */
inline kick() {
	if
	:: db_set == 0 ->
		lock();
		if
		:: db_set == 0 -> db_set = 1; db_cnt = 1; late = late || !rdy
		:: else -> skip
		fi;
		unlock()
	:: else -> skip
	fi
}

/* bell__take under dblock: read(2), `set` = 0. */
inline take() {
	lock();
	if
	:: db_set == 1 -> db_cnt = 0; db_set = 0
	:: else -> skip
	fi;
	unlock()
}

/* bell__clear: test `set`, take, look at the queue, kick. */
inline clear() {
	if
	:: db_set == 1 ->
		take();
		if
		:: q -> kick()
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* BELL_LOOK_EXACT: a rung doorbell with nothing ready behind it (a look
 * at the queue without changing it, rq_any_ready: a queued item whose
 * source shows something), then bell__unstale: take, look again, ring
 * again if one is ready now. */
inline unstale() {
	if
	:: db_set == 1 && !(q && rdy) ->
		take();
		if
		:: q && rdy -> kick()
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* A read that empties the source (the counter's CAS), then
 * uefd__was_read's gate (bell_any_exact: seq_cst load), then
 * BELL_LOOK_CHANGED's bell__mirror: prune (the item dropped, its source
 * empty), clear. */
proctype reader()
{
	atomic { rdy = 0; rflight = 1 };
	if
	:: nexact > 0 ->
		atomic { if :: q && !rdy -> q = 0 :: else -> skip fi };
		clear()
	:: else -> skip			/* LAZY */
	fi;
	rflight = 0
}

/* krec_ctl_nest for a one-shot holder: krec__exact_hold (bell_exact, then
 * the look), the kernel ADD (its poll of the instance's fd), the hold's
 * end (the record's own count, if any, outlives it: not modelled, it only
 * keeps nexact above 0). */
proctype ctl()
{
#ifdef MUTANT_EXACT_LOOK_FIRST
	unstale();
	nexact++;
#else
#ifndef MUTANT_EXACT_COUNT_LATE
	nexact++;
#endif
#ifndef MUTANT_EXACT_NO_LOOK
	unstale();
#endif
#endif
	atomic {
		/* the kernel's poll: a non-zero level must have a ready item
		 * behind it, or a read on its way that will take it (or be
		 * WATCHED's late ring) */
		assert(db_cnt == 0 || rdy || rflight || late);
		polled = 1
	};
#ifdef MUTANT_EXACT_COUNT_LATE
	nexact++;
#endif
	nexact--
}

/* A lazy look: a holder's check or a wait on the instance that finds
 * nothing (BELL_LOOK_NESTED: prune, else clear), at any time. */
proctype looker()
{
	atomic { if :: q && !rdy -> q = 0 :: else -> skip fi };
	if
	:: q -> skip
	:: else -> clear()
	fi
}

/* When everything is done: the kernel polled, and no level is left over an
 * empty source but a lazy one (nexact 0 since, no look came after the
 * read), which the holder's next check takes. */
proctype monitor()
{
	timeout ->
	assert(polled);
	assert(rdy == 0)
}

init
{
	atomic {
		run reader();
		run ctl();
		if
		:: run looker()
		:: skip
		fi;
		run monitor()
	}
}
