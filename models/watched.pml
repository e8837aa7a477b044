/*
 * watched.pml - the doorbell of a watched instance (src/bell.c, WATCHED):
 * an instance held by other uepoll instances (nesting), for the spin model
 * checker.  Checked exhaustively: no execution leaves a holder asleep while
 * an item is queued (lost wakeup), nor the doorbell's eventfd counting when
 * everything is asleep and nothing is queued (a stuck ring: the instance
 * would read ready for ever, its holders woken on every look), every item
 * is consumed once, and an edge-triggered holder gets a doorbell write
 * after each event (the kernel wakes an epoll's pollers on each event of a
 * source it holds).
 *
 * The watched instance's doorbell is level-triggered in its kernel epoll:
 * a level-triggered holder's kernel epoll reports the instance while the
 * doorbell's eventfd is non-zero, whatever woke it.  Shared state, as in
 * bell.c:
 *   count       items on the ready queue (rq_empty: the queue's tail,
 *               published by cds_wfcq_enqueue's fenced exchange)
 *   db_set      bell.set: the doorbell rung (its eventfd non-zero, or the
 *               ring's write on its way)
 *   db_cnt      the doorbell's eventfd is non-zero (the level)
 *   db_edge     a write of the doorbell since the edge-triggered holder's
 *               last wakeup (each write wakes the holders' callbacks)
 *   wgen        writes of the doorbell so far: a level-triggered sleeper
 *               wakes while the eventfd is non-zero and something is
 *               queued or it was written since the sleeper's last look (a
 *               stuck eventfd, non-zero with nothing queued, would wake it
 *               for ever in C; here it sleeps, and the monitor sees the
 *               eventfd counting)
 *   dblock      bell.dblock: a ring's `set` = 1 and write, a take's read
 *               and `set` = 0, each one step for the other
 *   wedge       bell__nedge: an instance holds this one, or one above it,
 *               edge-triggered (the count is the process's: the kernel
 *               wakes an edge-triggered holder two levels up through every
 *               level, so the holder modelled here stands for any of them)
 *   registered  the edge-triggered holder's kernel registration exists
 *   mine[i]     producer i's last event, queued after the registration,
 *               has had no edge since (ghost)
 * A signal (port_item_signal: rq_enqueue, then bell__kick_edge) rings on
 * every event while a holder is edge-triggered (bell__ring: under dblock,
 * `set` = 1, then the write), else only when `set` is 0 (bell__kick_db:
 * test; bell__ring_idle: under dblock, exchange, write).  bell__clear (a
 * wait that found nothing, bell__mirror, a holder's check krec__ready) tests
 * `set`, reads the eventfd and stores `set` = 0 under dblock, looks at the
 * queue and kicks.  bell_watch (read, `set` = 0, prune, kick) is done
 * before the model starts: it is bell__clear's order with the count first.
 * Each line between labels is one atomic step of the C code.  Three
 * configurations (init chooses):
 *   0  wedge = 0: a level-triggered holder's thread (asleep until the
 *      level, then its caller's waits on the instance take what is queued
 *      and the one that finds nothing clears) beside a thread of the
 *      instance (takes an item, or clears as a zero-timeout wait that found
 *      nothing, or sleeps: clears, counts itself, re-checks, sleeps on the
 *      level-triggered doorbell);
 *   1  wedge = 1: an edge-triggered holder's thread (asleep until a write
 *      of the doorbell) beside the level-triggered one; each producer
 *      asserts after its signal that its event has had a write since;
 *   2  wedge = 0 at first: the edge-triggered holder registers while the
 *      producers run (krec__nest_count: the count, then the kernel ADD,
 *      whose poll gives the new registration an edge if the doorbell's
 *      eventfd is non-zero); an event queued after the registration must
 *      have its edge, as in 1.
 * models/check.sh runs it, and each mutant, which must fail:
 *   MUTANT_WATCH_NO_WEDGE     a signal only kicks though a holder is
 *                             edge-triggered
 *   MUTANT_RING_UNLOCKED      rings and takes without dblock: a take's
 *                             read before a ring's write lands, its store
 *                             of 0 after the ring's store of 1
 *   MUTANT_CLEAR_STORE_FIRST  bell__clear stores `set` = 0 before its read,
 *                             outside dblock
 *   MUTANT_CLEAR_NO_RECHECK   bell__clear does not look at the queue (and
 *                             kick) after its store
 *   MUTANT_KICK_FIRST         the kick before the item is queued
 *   MUTANT_EDGE_COUNT_LATE    an edge-triggered registration is counted
 *                             after its kernel ADD
 * (A holder that arrives while a wait on the instance dozes or naps, and a
 * kernel epoll's hold: models/arrive.pml.)
 */
#define NPROD 2
#define PER   2		/* items per producer */

byte count;
bit db_set;
bit db_cnt;
bit db_edge;
bit wedge;
bit registered;
bit mine[NPROD];
byte produced;
byte consumed;
byte wgen;
bit dblock;

inline lock() {
#ifndef MUTANT_RING_UNLOCKED
	atomic { dblock == 0 -> dblock = 1 }
#else
	skip
#endif
}

inline unlock() {
	dblock = 0
}

/* write(dbfd): the level, and a wakeup of every holder's callback (an
 * edge for the edge-triggered one once it is registered). */
inline write_db() {
	atomic {
		db_cnt = 1;
		wgen++;
		if
		:: registered -> db_edge = 1
		:: else -> skip
		fi
	}
}

/* bell__kick_db: test; bell__ring_idle: under dblock, exchange, write(2). */
inline kick_db() {
	if
	:: db_set == 0 ->
		lock();
		if
		:: atomic { db_set == 0 -> db_set = 1 } ->
			write_db()			/* write(dbfd) */
		:: atomic { db_set == 1 -> skip }
		fi;
		unlock()
	:: else -> skip
	fi
}

/* bell__kick_edge while watched. */
inline signal() {
#ifdef MUTANT_WATCH_NO_WEDGE
	kick_db()
#else
	if
	:: wedge ->
		lock();				/* bell__ring */
		db_set = 1;
		write_db();			/* write(dbfd) */
		unlock()
	:: else -> kick_db()
	fi
#endif
}

/* bell__clear: test `set`; under dblock, read(dbfd), then `set` = 0; then
 * look and kick. */
inline clear() {
	if
	:: db_set == 1 ->
#ifdef MUTANT_CLEAR_STORE_FIRST
		db_set = 0;
		lock();
		db_cnt = 0;
		unlock();
#else
		lock();
		if
		:: db_set == 1 ->
			db_cnt = 0;
			db_set = 0
		:: else -> skip
		fi;
		unlock();
#endif
#ifndef MUTANT_CLEAR_NO_RECHECK
		if
		:: count > 0 -> kick_db()
		:: else -> skip
		fi
#endif
	:: else -> skip
	fi
}

proctype producer(byte me)
{
	byte i = 0;
	do
	:: i < PER ->
#ifdef MUTANT_KICK_FIRST
		signal();
		atomic { count++; produced++; mine[me] = registered }
#else
		atomic { count++; produced++; mine[me] = registered }	/* rq_enqueue */
		signal();
		assert(!mine[me] || db_edge);
#endif
		i++
	:: else -> break
	od
}

/* A level-triggered holder's thread: its kernel epoll reports the instance
 * while the doorbell's eventfd is non-zero; its caller's waits on the
 * instance then take what is queued, and the one that finds nothing
 * clears (wait__settle, bell__mirror). */
proctype holder_lt()
{
	byte seen = 255;
	do
	:: true ->
end_lt:		atomic { db_cnt == 1 && (wgen != seen || count > 0) ->
			 seen = wgen };
		do
		:: atomic { count > 0 -> count--; consumed++ }
		:: atomic { count == 0 -> break }
		od;
		clear()
	od
}

/* An edge-triggered holder's thread, woken by each write of the doorbell:
 * every producer's event before it has had its edge. */
proctype holder_et()
{
	do
	:: true ->
end_et:		atomic { db_edge == 1 -> db_edge = 0; mine[0] = 0; mine[1] = 0 };
		do
		:: atomic { count > 0 -> count--; consumed++ }
		:: atomic { count == 0 -> break }
		od;
		clear()
	od
}

/* An edge-triggered holder registering (krec__nest_count, then the kernel
 * ADD, whose poll queues the new registration if the instance is ready). */
proctype adder()
{
#ifndef MUTANT_EDGE_COUNT_LATE
	wedge = 1;
#endif
	atomic {
		registered = 1;
		if
		:: db_cnt == 1 -> db_edge = 1
		:: else -> skip
		fi
	};
#ifdef MUTANT_EDGE_COUNT_LATE
	wedge = 1;
#endif
	skip
}

/* A thread waiting on the instance itself. */
proctype waiter()
{
	byte seen = 255;
	do
	:: atomic { count > 0 -> count--; consumed++ }
	:: atomic { count == 0 -> skip }; clear()	/* found nothing */
	:: atomic { count == 0 -> skip } ->
		/* wait__sleep: bell__mirror, bell__sleep_begin (the count is
		 * not looked at by a watched instance's signals), epoll_wait
		 * on the level-triggered doorbell (bell_took leaves `set`) */
		clear();
		if
		:: count > 0 -> skip
		:: else ->
end_w:			atomic { db_cnt == 1 &&
				 (wgen != seen || count > 0) -> seen = wgen }
		fi
	od
}

/* Runs only when nothing else can move: every thread is asleep (or the
 * producers are done).  A queued item at that point is a lost wakeup. */
proctype monitor()
{
	timeout ->
	assert(count == 0);
	assert(db_cnt == 0);	/* no ring stuck in the eventfd */
	assert(consumed == produced);
	assert(produced == NPROD * PER)
}

init
{
	atomic {
		byte i;
		byte cfg;
		if
		:: cfg = 0
		:: cfg = 1; wedge = 1; registered = 1
		:: cfg = 2
		fi;
		for (i : 1 .. NPROD) { run producer(i - 1) }
		run holder_lt();
		if
		:: cfg == 0 -> run waiter()
		:: cfg == 1 -> run holder_et()
		:: cfg == 2 -> run adder(); run holder_et()
		fi;
		run monitor()
	}
}
