/*
 * hold.pml - held writes (UEVENTFD_HOLD_WRITES: src/eventfd_hold.c HOLD, on
 * src/timer.c PENDING and the doorbell protocol of src/bell.c), for the spin
 * model checker.  Checked exhaustively: no written value is stranded in
 * `held` with no timer run due, no waiter sleeps while a shown value is
 * queued, and every value written is consumed exactly once.
 *
 * Shared state:
 *   held        the ueventfd's held value (written, not shown)
 *   count, db_set, db_pending  as in doorbell.pml (a shown unit is a queued
 *               item for the waiters)
 *   pending     the ueventfd's co_timer.pending
 *   queued      the timer is on the heap (its run will come)
 * A write adds to `held` (CAS), then either arms the timer or, when it
 * brought `held` to the count threshold, shows the value itself (the choice
 * is free, so both mix).  Showing is one exchange of `held`, then the
 * ordinary write of the sum (add to the counter, queue, ring).  The timer
 * process is the timer thread: it takes a due timer off the heap, clears
 * pending, then shows.
 * Mutants that must be caught (models/check.sh):
 *   MUTANT_CLEAR_LATE   the thread clears pending after it shows
 *   MUTANT_ARM_FIRST    the write arms the timer before it adds to held
 */
#define NPROD 2
#define NWAIT 1
#define PER   2		/* writes per producer */

byte held;
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

/* uefd__show: exchange held, add the sum to the counter (the items are
 * queued), then ring as a write that is due now. */
inline show_held(h) {
	atomic { h = held; held = 0 };
	if
	:: h > 0 ->
		count = count + h;
		kick()
	:: else -> skip
	fi
}

proctype producer()
{
	byte i = 0, h = 0;
	do
	:: i < PER ->
#ifdef MUTANT_ARM_FIRST
		arm();
		atomic { held++; produced++ };
#else
		atomic { held++; produced++ };		/* CAS on held */
		if
		:: arm()
		:: show_held(h)				/* count reached */
		fi;
#endif
		i++
	:: else -> break
	od
}

proctype timer()
{
	byte h = 0;
	do
	:: true ->
end_idle:	atomic { queued == 1 -> queued = 0 };	/* deadline passed */
#ifdef MUTANT_CLEAR_LATE
		show_held(h);
		pending = 0
#else
		pending = 0;				/* before the show */
		show_held(h)
#endif
	od
}

proctype waiter()
{
	do
	:: true ->
		/* wait__collect: take one queued unit */
		if
		:: atomic { count > 0 -> count--; consumed++ } ->
			if
			:: count > 0 -> kick()		/* wait__settle */
			:: else -> skip
			fi
		:: atomic { count == 0 -> skip } ->
			/* sleep section: re-check, then epoll_wait */
			if
			:: count > 0 -> skip
			:: else ->
end_sleep:			atomic { db_pending == 1 -> db_pending = 0 };
				db_set = 0	/* wait__kernel saw the doorbell */
			fi
		fi
	od
}

/* Runs only when nothing else can move: every waiter asleep and no timer
 * run due.  A value still held, or shown and not taken, is lost. */
proctype monitor()
{
	timeout ->
	assert(held == 0);
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
