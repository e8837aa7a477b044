/*
 * doorbell.pml - the instance's wake protocol (src/bell.c, DOORBELL and
 * NOPOLL), for the spin model checker.  Checked exhaustively: no execution
 * leaves a waiter asleep in epoll_wait while an item is queued (lost
 * wakeup), and every item produced is consumed exactly once.
 *
 * Shared state, as in bell.c, port.c and wait.c:
 *   count       items on the ready queue (what rq_empty sees: the queue's
 *               tail, published by cds_wfcq_enqueue's fenced exchange)
 *   db_set      bell.set: doorbell rung, its event not yet taken
 *   db_pending  the doorbell's event is queued in the kernel epoll
 *   sleepers    bell.sleepers: threads counted before their re-check
 *   watched     bell.watched: another instance holds this one
 *   nopoll      UEPOLL_NOPOLL (chosen either way by init): signals ring
 *               only for a sleeper or a watcher (bell_wanted), and a wait
 *               that leaves items rings only for them (bell_settle); an
 *               instance with kernel fds rings as nopoll = 0 does (`fair`)
 * Each line between labels is one atomic step of the C code (a seq_cst load,
 * store or RMW, or one system call's effect), so every interleaving of those
 * steps is explored.  Two configurations (init chooses): two plain waiters,
 * or one outer instance's thread that watches this one (bell_watch) and
 * sleeps on its readiness without being a sleeper of it (NOPOLL's watcher
 * pair).  models/check.sh runs it, and also each mutant, which must fail:
 *   MUTANT_KICK_FIRST         the doorbell rung before the item is queued
 *   MUTANT_NOPOLL_LOOK_FIRST  NOPOLL: sleepers/watched loaded before the
 *                             item is queued
 *   MUTANT_NOPOLL_COUNT_LATE  NOPOLL: a sleeper re-checks the queue before
 *                             it counts itself
 *   MUTANT_NOPOLL_NO_WATCH    NOPOLL: a signal ignores watched
 *   MUTANT_NOPOLL_WATCH_LATE  NOPOLL: bell_watch prunes before it counts
 */
#define NPROD 2
#define NWAIT 2
#define PER   2		/* items per producer */

byte count;
bit db_set;
bit db_pending;
byte sleepers;
bit watched;
bit nopoll;
byte produced;
byte consumed;

/* bell_kick: test, then exchange, then write(2) to the doorbell. */
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

/* bell_wanted's loads, one step each; then bell_kick if wanted. */
inline signal() {
	want = !nopoll;
	if
	:: sleepers > 0 -> want = 1
	:: else -> skip
	fi;
#ifndef MUTANT_NOPOLL_NO_WATCH
	if
	:: watched -> want = 1
	:: else -> skip
	fi;
#endif
	if
	:: want -> kick()
	:: else -> skip
	fi
}

proctype producer()
{
	byte i = 0;
	bit want;
	do
	:: i < PER ->
#ifdef MUTANT_KICK_FIRST
		kick();				/* wrong order: must be caught */
		atomic { count++; produced++ }
#elif defined(MUTANT_NOPOLL_LOOK_FIRST)
		/* The decision taken before the enqueue: must be caught. */
		want = !nopoll;
		if
		:: sleepers > 0 || watched -> want = 1
		:: else -> skip
		fi;
		atomic { count++; produced++ };
		if
		:: want -> kick()
		:: else -> skip
		fi
#else
		atomic { count++; produced++ }	/* rq_enqueue */
		signal();			/* bell_kick_edge */
#endif
		i++
	:: else -> break
	od
}

proctype waiter()
{
	bit want;
	do
	:: true ->
		/* wait__collect: harvest one item (maxevents = 1) */
		if
		:: atomic { count > 0 -> count--; consumed++ } ->
			/* wait__settle: keep the fd readable for what is left
			 * (bell_settle; NOPOLL: only for a sleeper or a
			 * watcher) */
			if
			:: count > 0 -> signal()
			:: else -> skip
			fi
		:: atomic { count == 0 -> skip } ->
			/* sleep section: bell_sleep_begin (count ourselves,
			 * re-check), epoll_wait, bell_took, bell_sleep_end */
#ifdef MUTANT_NOPOLL_COUNT_LATE
			if
			:: count > 0 -> skip
			:: else ->
				sleepers++;
#else
			sleepers++;
			if
			:: count > 0 -> sleepers--
			:: else ->
#endif
end_sleep:			atomic { db_pending == 1 -> db_pending = 0 };
				db_set = 0;	/* bell_took */
				sleepers--
			fi
		fi
	od
}

/* A thread of an outer instance that holds this one: bell_watch (count,
 * then prune and kick if items are queued), then it sleeps in its own
 * kernel epoll until this instance's doorbell makes it readable, and its
 * caller's waits on this instance take what is queued (until one finds
 * nothing).  It is not a sleeper of this instance. */
proctype outer()
{
	bit want;
#ifdef MUTANT_NOPOLL_WATCH_LATE
	if
	:: count > 0 -> want = 1
	:: else -> want = 0
	fi;
	watched = 1;
#else
	watched = 1;
	if
	:: count > 0 -> want = 1
	:: else -> want = 0
	fi;
#endif
	if
	:: want -> kick()
	:: else -> skip
	fi;
	do
	:: true ->
end_outer:	atomic { db_pending == 1 -> db_pending = 0 };
		db_set = 0;
		do
		:: atomic { count > 0 -> count--; consumed++ }
		:: atomic { count == 0 -> break }
		od
	od
}

/* Runs only when nothing else can move: every waiter is asleep (or all
 * done).  A queued item at that point is a lost wakeup. */
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
		if
		:: nopoll = 0
		:: nopoll = 1
		fi;
		for (i : 1 .. NPROD) { run producer() }
		if
		:: for (i : 1 .. NWAIT) { run waiter() }
		:: run outer()
		fi;
		run monitor()
	}
}
