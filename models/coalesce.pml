/*
 * coalesce.pml - deferred (coalesced) wakeups on top of the doorbell protocol
 * (src/eventfd_hold.c COALESCE, src/timer.c PENDING, src/bell.c DOORBELL), for
 * the spin model checker.  Checked exhaustively: no execution leaves a
 * waiter asleep while an item is queued and no timer run is due (a lost
 * wakeup), and every item produced is consumed exactly once.
 *
 * Shared state:
 *   count, db_set, db_pending  as in doorbell.pml
 *   pending     the ueventfd's co_timer.pending
 *   queued      the timer is on the heap (its run will come)
 * A write either holds its ring (below the count threshold) or rings at
 * once (it reached the count); the choice is free, so both mix.  The timer
 * process is the timer thread: it takes a due timer off the heap, clears
 * pending, then rings if an item is still queued (port_item_kick).
 * Mutants that must be caught (models/check.sh):
 *   MUTANT_CLEAR_LATE   the thread clears pending after its look
 *   MUTANT_HOLD_FIRST   the write decides to hold before it queues the item
 */
#define NPROD 2
#define NWAIT 2
#define PER   2		/* items per producer */

byte count;
bit db_set;
bit db_pending;
byte produced;
byte consumed;
bit pending;
bit queued;

/* bell__kick: test, then exchange, then write(2) to the doorbell. */
inline kick() {
	if
	:: db_set == 0 ->
		if
		:: atomic { db_set == 0 -> db_set = 1 } ->
			db_pending = 1		/* write(dbfd): wakes one sleeper */
		:: atomic { db_set == 1 -> skip }
		fi
	:: else -> skip
	fi
}

/* timer_arm: the fast-path load, then the exchange; the winner queues. */
inline arm() {
	if
	:: pending == 1 -> skip
	:: else ->
		if
		:: atomic { pending == 0 -> pending = 1 } -> queued = 1
		:: atomic { pending == 1 -> skip }
		fi
	fi
}

/* port_item_signal with deferred != NULL: queue, then note whether a ring
 * was needed (bell__defer: set == 0); uefd_write then arms the timer. */
inline held_write() {
#ifdef MUTANT_HOLD_FIRST
	if
	:: db_set == 0 -> arm()
	:: else -> skip
	fi;
	atomic { count++; produced++ }
#else
	atomic { count++; produced++ };		/* rq_enqueue */
	if
	:: db_set == 0 -> arm()
	:: else -> skip
	fi
#endif
}

proctype producer()
{
	byte i = 0;
	do
	:: i < PER ->
		if
		:: held_write()
		:: atomic { count++; produced++ }; kick()	/* count reached */
		fi;
		i++
	:: else -> break
	od
}

proctype timer()
{
	do
	:: true ->
end_idle:	atomic { queued == 1 -> queued = 0 };	/* deadline passed */
#ifdef MUTANT_CLEAR_LATE
		if
		:: count > 0 -> kick()
		:: else -> skip
		fi;
		pending = 0
#else
		pending = 0;				/* before the look */
		if
		:: count > 0 -> kick()			/* wq_kick */
		:: else -> skip
		fi
#endif
	od
}

proctype waiter()
{
	do
	:: true ->
		/* wait__collect: harvest one item (maxevents = 1) */
		if
		:: atomic { count > 0 -> count--; consumed++ } ->
			/* wait__settle: keep the fd readable for what is left */
			if
			:: count > 0 -> kick()
			:: else -> skip
			fi
		:: atomic { count == 0 -> skip } ->
			/* sleep section: count ourselves, re-check, epoll_wait */
			if
			:: count > 0 -> skip
			:: else ->
end_sleep:			atomic { db_pending == 1 -> db_pending = 0 };
				db_set = 0	/* wait__kernel saw the doorbell: bell_took */
			fi
		fi
	od
}

/* Runs only when nothing else can move: every waiter asleep and no timer
 * run due.  A queued item then is a lost wakeup. */
proctype monitor()
{
	timeout ->
	assert(count == 0);
	assert(consumed == produced);
	assert(produced == NPROD * PER)
}

init
{
	atomic {
		byte i;
		for (i : 1 .. NPROD) { run producer() }
		for (i : 1 .. NWAIT) { run waiter() }
		run timer();
		run monitor()
	}
}
