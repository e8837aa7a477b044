/*
 * doze.pml - the doorbell protocol with a dozing batching wait (src/bell.c,
 * DOZE: bell__doze_begin/end, bell__dozer_event; src/wait.c, wait__doze), for the spin model
 * checker.
 * Checked exhaustively: when nothing can move any more (every waiter asleep,
 * every doze over), no item is left queued, and every item produced is
 * consumed exactly once.  A doze holds the instance's kicks while it is
 * counted in `dozers` (bell__kick_slow returns at once; db_set is not touched),
 * so a plain sleeper may sleep through items meanwhile; the doze always ends
 * (its window is a timer, an always-enabled step here), and on its way out
 * must uncount itself, then look and ring for what the sleeper missed: the
 * dozing thread may return from its wait then and never wait again.
 *
 * Shared state, as in bell.c and wait.c:
 *   count       items on the ready queue
 *   db_set      bell.set
 *   db_pending  the doorbell's event is queued in the kernel epoll
 *   sleepers    bell.sleepers
 *   dozers      bell.dozers
 * Each line between labels is one atomic step of the C code.  Mutants that
 * must be caught (models/check.sh):
 *   MUTANT_LOOK_FIRST  the doze looks at the queue (and kicks) before it
 *                      uncounts itself
 *   MUTANT_NO_REKICK   the doze does not ring for items queued meanwhile
 * (A holder that arrives during a doze: models/arrive.pml.)
 */
#define NPROD 2
#define PER   2		/* items per producer */
#define NDOZE 2		/* dozes of the batching waiter */

byte count;
bit db_set;
bit db_pending;
byte sleepers;
byte dozers;
byte produced;
byte consumed;

/* bell__ring_idle: under dblock, exchange, then write(2) if it found 0. */
inline ring_idle() {
	if
	:: atomic { db_set == 0 -> db_set = 1 } ->
		db_pending = 1
	:: atomic { db_set == 1 -> skip }
	fi
}

/* bell__kick: load db_set; then (bell__kick_slow) load dozers: a doze holds the
 * kick; else ring_idle. */
inline kick() {
	if
	:: db_set == 0 ->
		if
		:: dozers > 0 -> skip		/* held: the doze's end looks */
		:: else -> ring_idle()
		fi
	:: else -> skip
	fi
}

/* Take one item (maxevents = 1); keep the fd readable for what is left. */
inline collect_one() {
	atomic { count > 0 -> count--; consumed++ };
	if
	:: count > 0 -> kick()
	:: else -> skip
	fi
}

/* The plain sleep section of port_wait (bell__sleep_begin, epoll_wait, bell_took, bell__sleep_end). */
inline plain_sleep() {
	sleepers++;
	if
	:: count > 0 -> skip
	:: else ->
end_sleep:	atomic { db_pending == 1 -> db_pending = 0 };
		db_set = 0
	fi;
	sleepers--
}

proctype producer()
{
	byte i = 0;
	do
	:: i < PER ->
		atomic { count++; produced++ };		/* rq_enqueue */
		/* bell__dozer_event: an urgent item (or the one that makes
		 * min_events) rings the doorbell unless it is rung (its event
		 * pending, or taken by a sleeper that harvests), held or not. */
		if
		:: dozers > 0 -> ring_idle()
		:: true -> skip
		fi;
		kick();
		i++
	:: else -> break
	od
}

proctype waiter()
{
	do
	:: collect_one()
	:: atomic { count == 0 -> skip } -> plain_sleep()
	od
}

proctype dozer()
{
	byte d = 0;
	do
	:: collect_one()
	:: atomic { count == 0 -> skip } ->
		if
		:: d < NDOZE ->
			d++;
			/* bell__doze_begin: counted (the hold), then the
			 * re-check */
			dozers++;
			sleepers++;
			if
			:: count > 0 -> skip
			:: else ->
				if
				:: atomic { db_pending == 1 -> db_pending = 0 };
					db_set = 0	/* bell_took */
				:: true -> skip	/* the window closes */
				fi
			fi;
			/* bell__doze_end: uncounted, then the look */
			sleepers--;
#ifdef MUTANT_LOOK_FIRST
			if
			:: count > 0 ->
				if
				:: sleepers > 0 -> kick()
				:: else -> skip
				fi
			:: else -> skip
			fi;
			dozers--;
#else
			dozers--;
#ifndef MUTANT_NO_REKICK
			if
			:: count > 0 ->
				if
				:: sleepers > 0 -> kick()
				:: else -> skip
				fi
			:: else -> skip
			fi;
#endif
#endif
			/* The wait may return now (maxevents reached) and
			 * its thread never wait again: what is left queued
			 * is the plain waiter's. */
			if
			:: true -> skip
			:: true -> break
			fi
		:: else -> plain_sleep()
		fi
	od
}

/* Runs only when nothing else can move.  A queued item then is lost. */
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
		run waiter();
		run dozer();
		run monitor()
	}
}
