/*
 * quiet.pml - QUIET (src/bell.c, port_item_signal in src/port.c): a source's
 * event queues its item as always, but the doorbell is written for it only
 * if the item's source still shows something when the signaler looks, after
 * the enqueue.  The DOORBELL argument (models/doorbell.pml) had "a queued
 * item was rung for by whoever queued it"; QUIET drops that, so this model
 * checks what replaces it: the last change that made the source ready is
 * followed by its own walk, which looks after its own CAS, and a signal that
 * finds its item already queued still kicks.
 *
 * Checked exhaustively: no execution ends with every waiter asleep while the
 * source holds a value (a lost wakeup), and every value written is read
 * once (by a waiter, after its wait reported the item, or by a reader that
 * does not wait on this instance).  An item may stay queued while the waiters
 * sleep, as long as its source shows nothing: that is the new state QUIET
 * allows, and the kernel's ready list has it too (an epitem queued by a
 * wakeup that left nothing ready).
 *
 * State:
 *   ctr         the ueventfd's counter
 *   st          the item: 1 queued on the instance's ready queue, 0 idle
 *   db_set      bell.set; db_pending: the doorbell's event in the kernel
 *               epoll; sleepers: bell.sleepers
 *   wql         the source's wq lock (walks are serialised by it)
 * Producers write 0 or 1 (a write of 0 walks too, as the kernel's eventfd
 * wakes its watchers on every write), then walk: enqueue, then (bell__would_ring
 * true: `set` 0 and wanted) look at the source and kick only if it shows
 * something; else kick as before (bell__kick_edge, which tests `set` again).
 * A drainer reads the counter without waiting on the instance (another
 * instance's waiter in a wake-all herd).  Each line between labels is one
 * atomic step of the C code.  models/check.sh runs it and each mutant, which
 * must fail:
 *   MUTANT_QUIET_BEFORE_CAS   the look uses the counter as it was before the
 *                             producer's own CAS
 *   MUTANT_QUIET_SKIP_QUEUED  a signal whose item was queued already does
 *                             not kick (true before QUIET: the enqueuer
 *                             always rang)
 */
#define NPROD 2
#define NWAIT 2

byte ctr;
bit st;
bit db_set;
bit db_pending;
byte sleepers;
bit wql;
byte written;
byte consumed;

/* bell__kick: test, then exchange, then write(2) the doorbell (wakes one
 * sleeper; its event stays pending until a waiter takes it). */
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
	bit queued, ready;
	byte v;
	if
	:: v = 1
	:: v = 0	/* a write of 0 */
	fi;
#ifdef MUTANT_QUIET_BEFORE_CAS
	ready = ctr > 0;
#endif
	atomic { ctr = ctr + v; written = written + v }	/* the CAS */
	/* wq_wake: the walk, under the source's lock */
	atomic { wql == 0 -> wql = 1 };
	atomic {					/* rq_enqueue */
		if
		:: st == 0 -> st = 1; queued = 1
		:: else -> queued = 0
		fi
	};
	if
	:: db_set == 0 ->			/* bell__would_ring */
#ifndef MUTANT_QUIET_BEFORE_CAS
		ready = ctr > 0;		/* item_poll */
#endif
#ifdef MUTANT_QUIET_SKIP_QUEUED
		if
		:: ready && queued -> kick()
		:: else -> skip
		fi
#else
		if
		:: ready -> kick()
		:: else -> skip
		fi
#endif
	:: else ->
#ifdef MUTANT_QUIET_SKIP_QUEUED
		if
		:: queued -> kick()
		:: else -> skip
		fi
#else
		kick()				/* bell__kick_edge */
#endif
	fi;
	wql = 0
}

proctype waiter()
{
	do
	:: atomic { st == 1 -> st = 0 } ->
		/* the harvest takes the item, marks it idle, polls it; the
		 * caller reads what the wait reported */
		if
		:: ctr > 0 -> atomic { consumed = consumed + ctr; ctr = 0 }
		:: else -> skip			/* dropped: nothing shown */
		fi
	:: atomic { st == 0 -> skip } ->
		/* bell__sleep_begin: count, re-check; epoll_wait; bell_took */
		sleepers++;
		if
		:: st == 1 -> sleepers--
		:: else ->
end_sleep:		atomic { db_pending == 1 -> db_pending = 0 };
			db_set = 0;
			sleepers--
		fi
	od
}

/* A reader that does not wait on this instance: takes the whole counter. */
proctype drainer()
{
	do
	:: atomic { ctr > 0 -> consumed = consumed + ctr; ctr = 0 }
	:: true -> break
	od
}

/* Runs only when nothing else can move: every waiter is asleep.  A value
 * left in the source then is a lost wakeup. */
proctype monitor()
{
	timeout ->
	assert(ctr == 0);
	assert(consumed == written)
}

init
{
	atomic {
		byte i;
		for (i : 1 .. NPROD) { run producer() }
		for (i : 1 .. NWAIT) { run waiter() }
		run drainer();
		run monitor()
	}
}
