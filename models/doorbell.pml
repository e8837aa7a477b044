/*
 * doorbell.pml - the instance's wake protocol (src/bell.c, DOORBELL), for
 * the spin model checker.  Checked exhaustively: no execution leaves a
 * waiter asleep in epoll_wait while an item is queued (lost wakeup), and
 * every item produced is consumed exactly once.
 *
 * Shared state, as in bell.c, port.c and wait.c:
 *   count       items on the ready queue (what rq_empty sees: the queue's
 *               tail, published by cds_wfcq_enqueue's fenced exchange)
 *   db_set      bell.set: doorbell rung, its event not yet taken
 *   db_pending  the doorbell's event is queued in the kernel epoll
 * Each line between labels is one atomic step of the C code (a seq_cst load,
 * store or RMW, or one system call's effect), so every interleaving of those
 * steps is explored.  models/check.sh runs it, and also runs it built with
 * -DMUTANT_KICK_FIRST (the doorbell rung before the item is queued), which
 * must fail: proof that the check can catch a lost wakeup.
 */
#define NPROD 2
#define NWAIT 2
#define PER   2		/* items per producer */

byte count;
bit db_set;
bit db_pending;
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

proctype producer()
{
	byte i = 0;
	do
	:: i < PER ->
#ifdef MUTANT_KICK_FIRST
		kick();				/* wrong order: must be caught */
		atomic { count++; produced++ }
#else
		atomic { count++; produced++ }	/* rq_enqueue */
		kick();
#endif
		i++
	:: else -> break
	od
}

proctype waiter()
{
	do
	:: true ->
		/* wait__collect: harvest one item (maxevents = 1) */
		if
		:: atomic { count > 0 -> count--; consumed++ } ->
			/* wait__settle: keep the fd readable for what is left (bell_settle) */
			if
			:: count > 0 -> kick()
			:: else -> skip
			fi
		:: atomic { count == 0 -> skip } ->
			/* sleep section: bell_sleep_begin (count ourselves, re-check), epoll_wait */
			if
			:: count > 0 -> skip
			:: else ->
end_sleep:			atomic { db_pending == 1 -> db_pending = 0 };
				db_set = 0	/* wait__kernel saw the doorbell: bell_took */
			fi
		fi
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
		for (i : 1 .. NPROD) { run producer() }
		for (i : 1 .. NWAIT) { run waiter() }
		run monitor()
	}
}
