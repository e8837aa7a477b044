/*
 * unstale.pml - UNSTALE (bell__unstale in src/bell.c, port_revalidate in
 * src/port.c): an instance a kernel epoll holds level-triggered (kheld) must
 * not read ready for items that are not, nor stop reading ready while one
 * is.  The kernel polls the instance's fd, which is readable while its
 * doorbell is (the kernel epoll's own poll of an epoll looks at its ready
 * list; ours has to keep the doorbell's level).  When a read empties a
 * ueventfd, the reader takes the doorbell (reads the eventfd, then stores
 * set = 0), then looks at the queue without changing it (rq_any_ready: a
 * queued item whose source shows something) and rings again if it finds
 * one.  A producer writes, enqueues its item (or finds it queued), then
 * kicks: rings if `set` is 0 (QUIET: only if its source still shows
 * something when it looks).
 *
 * Checked exhaustively: when nothing can move any more, an item queued
 * whose source shows a value has the doorbell readable (no readiness lost
 * for the kernel holder).  The queue keeps a stale item in place (st stays
 * 1 after its source was emptied), as the kernel's list does.
 *
 * State: ctr the ueventfd's counter; st the item queued; db_set bell.set;
 * db_pending the doorbell's eventfd readable (the instance's fd, as the
 * kernel epoll sees it).  models/check.sh runs it and each mutant, which
 * must fail:
 *   MUTANT_UNSTALE_NO_RECHECK  the take is not followed by a look: a write
 *                              whose kick found `set` 1 just before the take
 *                              is lost to the holder
 *   MUTANT_UNSTALE_LOOK_FIRST  the look comes before the take: a write
 *                              between them is lost the same way
 */
#define NPROD 2

byte ctr;
bit st;
bit db_set;
bit db_pending;

/* bell__kick: test, then exchange, then write(2) the doorbell. */
inline kick() {
	if
	:: db_set == 0 ->
		if
		:: atomic { db_set == 0 -> db_set = 1 } -> db_pending = 1
		:: atomic { db_set == 1 -> skip }
		fi
	:: else -> skip
	fi
}

proctype producer()
{
	ctr++;					/* the write's CAS */
	st = 1;					/* rq_enqueue, or queued */
	/* port_item_signal: QUIET's look, then bell__kick_edge */
	if
	:: db_set == 0 ->
		if
		:: ctr > 0 -> kick()
		:: else -> skip
		fi
	:: else -> kick()
	fi
}

/* A read that empties the counter, then uefd__was_read's wq_unready:
 * port_revalidate of the item's kheld instance, bell__unstale. */
proctype reader()
{
	do
	:: atomic { ctr > 0 -> ctr = 0 } ->
		if
		:: db_set == 1 ->
#ifdef MUTANT_UNSTALE_LOOK_FIRST
			if
			:: st == 1 && ctr > 0 -> skip	/* ready: kept */
			:: else ->
				db_pending = 0;
				db_set = 0
			fi
#else
			db_pending = 0;		/* bell__take: read(2) */
			db_set = 0;		/* then set = 0; seq_cst fence */
#ifndef MUTANT_UNSTALE_NO_RECHECK
			if
			:: st == 1 && ctr > 0 -> kick()	/* rq_any_ready */
			:: else -> skip
			fi
#endif
#endif
		:: else -> skip			/* not rung: nothing to take */
		fi
	:: true -> break
	od
}

/* Runs only when nothing else can move. */
proctype monitor()
{
	timeout ->
	assert(!(st == 1 && ctr > 0) || db_pending == 1)
}

init
{
	atomic {
		byte i;
		for (i : 1 .. NPROD) { run producer() }
		run reader();
		run monitor()
	}
}
