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
 *               only for a sleeper or a watcher (bell__wanted), and a wait
 *               that leaves items rings only for them (bell__settle); an
 *               instance with kernel fds rings as nopoll = 0 does (`fair`)
 *   nappers     bell.nappers: sleepers asleep on the futex word (NAP)
 *   napped      bell.napped: a ring woke a napper, none has come back since
 *               (rings for nappers stop there, as the doorbell's at db_set)
 *   fseq        the futex word bell.nap; inq[i]/woken[i]: waiter i queued
 *               in FUTEX_WAIT / dequeued by a FUTEX_WAKE (the kernel's
 *               futex queue: a wake dequeues a queued waiter, which then
 *               returns 0 even if a signal comes too)
 *   nkernel     a kernel fd registered (ctl, in the NAP configuration: its
 *               ADD raises nkernel then bell__unnap; then its event comes,
 *               kready, and only a thread in the kernel epoll can see it)
 *   sig         signals left to deliver: one napper may end its nap with
 *               EINTR, after which its thread never waits again (the wait
 *               returns to a caller who may stop waiting)
 *   quit        NAP configuration: one waiter (at most) stops waiting, after
 *               that EINTR or after a wait that collected
 *   tmo         timeouts left: one epoll_wait may time out (NAP
 *               configuration), leaving a rung doorbell's event behind
 *               (the stale doorbell NOPOLL does not clear)
 * Each line between labels is one atomic step of the C code (a seq_cst load,
 * store or RMW, or one system call's effect), so every interleaving of those
 * steps is explored.  Three configurations (init chooses): two plain waiters;
 * one outer instance's thread that watches this one (bell_watch) and sleeps
 * on its readiness without being a sleeper of it (NOPOLL's watcher pair);
 * NAP: nopoll, two waiters that each time either nap or sleep in the kernel
 * epoll (a wait with a sigmask), one EINTR, and a ctl that adds a kernel fd
 * whose event follows or the end of NOPOLL while in use (UNNOPOLL).  models/check.sh runs it, and also each mutant,
 * which must fail:
 *   MUTANT_KICK_FIRST         the doorbell rung before the item is queued
 *   MUTANT_NOPOLL_LOOK_FIRST  NOPOLL: sleepers/watched loaded before the
 *                             item is queued
 *   MUTANT_NOPOLL_COUNT_LATE  NOPOLL: a sleeper re-checks the queue before
 *                             it counts itself
 *   MUTANT_NOPOLL_NO_WATCH    NOPOLL: a signal ignores watched
 *   MUTANT_NOPOLL_WATCH_LATE  NOPOLL: bell_watch prunes before it counts
 *   MUTANT_NAP_NO_TAKE        a napper does not take `napped` (= 0)
 *                             before its re-check
 *   MUTANT_NAP_END_KEEPS_NAPPED  a napper leaves `napped` as a ring left it
 *   MUTANT_NAP_NO_PASS        a nap ended by EINTR does not pass the ring on
 *   MUTANT_NAP_KERNEL_FIRST   a napper looks at nkernel before it counts
 *   MUTANT_NAP_NO_UNNAP       a kernel fd's ADD does not wake nappers
 *   MUTANT_NAP_NO_NOPOLL_CHECK  a napper does not look at nopoll after its
 *                             count (UNNOPOLL)
 *   MUTANT_UNNOPOLL_NO_UNNAP  the end of NOPOLL does not wake nappers
 * (A nap's timeout is not modelled: a napper that times out goes round and
 * collects, as a woken one does.)
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
bit napped;
bit quit;	/* NAP configuration: a waiter has stopped waiting */
byte produced;
byte consumed;
byte nappers;
byte fseq;
bit inq[2];
bit woken[2];
bit napok;	/* the NAP configuration: waiters may nap */
bit nkernel;
bit kready;
byte sig;
byte tmo;

/* FUTEX_WAKE of one queued napper (any), or of all. */
inline futex_wake_one() {
	atomic {
		if
		:: inq[0] -> inq[0] = 0; woken[0] = 1
		:: inq[1] -> inq[1] = 0; woken[1] = 1
		:: else -> skip
		fi
	}
}

inline futex_wake_all() {
	atomic {
		if :: inq[0] -> inq[0] = 0; woken[0] = 1 :: else -> skip fi;
		if :: inq[1] -> inq[1] = 0; woken[1] = 1 :: else -> skip fi
	}
}

/* bell__ring_idle: under dblock, exchange db_set, then write(2) if it
 * found 0 (wakes one sleeper). */
inline ring_idle() {
	if
	:: atomic { db_set == 0 -> db_set = 1 } ->
		db_pending = 1
	:: atomic { db_set == 1 -> skip }
	fi
}

/* bell__nap_ring: test, exchange napped, then raise the word and wake one. */
inline nap_ring() {
	if
	:: napped == 0 ->
		if
		:: atomic { napped == 0 -> napped = 1 } ->
			fseq++;
			futex_wake_one()
		:: atomic { napped == 1 -> skip }
		fi
	:: else -> skip
	fi
}

/* bell__kick: load db_set and nappers; then (bell__kick_slow) watched, nappers
 * and nopoll: a napper's ring (whatever db_set says: NOPOLL leaves stale
 * doorbells) or the doorbell's. */
inline kick() {
	if
	:: db_set == 0 || nappers > 0 ->
		if
		:: !watched && nappers > 0 && nopoll -> nap_ring()
		:: else -> ring_idle()
		fi
	:: else -> skip
	fi
}

/* bell__unnap, after the caller's RMW. */
inline unnap() {
	if
	:: nappers > 0 -> fseq++; futex_wake_all()
	:: else -> skip
	fi
}

/* bell__wanted's loads, one step each; then bell__kick if wanted. */
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
		signal();			/* bell__kick_edge */
#endif
		i++
	:: else -> break
	od
}

/* bell__nap_end: uncount, give `napped` back, and (pass) hand a ring on. */
inline nap_end(pass) {
	sleepers--;
	nappers--;
#ifndef MUTANT_NAP_END_KEEPS_NAPPED
	napped = 0;
#endif
	if
	:: pass && count > 0 ->
		if
		:: sleepers > 0 -> signal_kick()
		:: else -> skip
		fi
	:: else -> skip
	fi
}

inline signal_kick() {
	kick()
}

proctype waiter(byte me)
{
	bit want, pass, gave_up;
	byte seq;
	do
	:: true ->
		/* wait__collect: harvest one item (maxevents = 1) */
		if
		:: atomic { count > 0 -> count--; consumed++ } ->
			/* wait__settle: keep the fd readable for what is left
			 * (bell__settle; NOPOLL: only for a sleeper or a
			 * watcher) */
			if
			:: count > 0 -> signal()
			:: else -> skip
			fi;
			/* NAP: the wait returns, and its caller may never wait
			 * again (one of the two): what comes later is the other
			 * waiter's, a napper perhaps. */
			if
			:: atomic { napok && !quit -> quit = 1 }; break
			:: true -> skip
			fi
		:: atomic { count == 0 && napok && nopoll && !watched &&
			    !nkernel -> skip } ->
			/* NAP (wait__nap): bell__nap_begin (its nkernel check
			 * after the count), FUTEX_WAIT, bell__nap_end */
			seq = fseq;
			gave_up = 0;
#ifdef MUTANT_NAP_KERNEL_FIRST
			gave_up = nkernel;
#endif
			sleepers++;
			nappers++;
#ifndef MUTANT_NAP_NO_NOPOLL_CHECK
			if
			:: !nopoll -> gave_up = 1	/* UNNOPOLL */
			:: else -> skip
			fi;
#endif
#ifndef MUTANT_NAP_NO_TAKE
			napped = 0;
#endif
			if
			:: count > 0 -> nap_end(0)	/* items: collect */
			:: else ->
#ifndef MUTANT_NAP_KERNEL_FIRST
				gave_up = gave_up || nkernel;
#endif
				if
				:: gave_up -> nap_end(0)
				:: else ->
					pass = 0;
					if
					:: atomic { fseq == seq -> inq[me] = 1 } ->
end_nap:					if
						:: atomic { woken[me] -> woken[me] = 0 }
						:: atomic { inq[me] && sig > 0 &&
							    !quit ->
							    inq[me] = 0; sig--; pass = 1;
							    quit = 1 }
						fi
					:: atomic { fseq != seq -> skip }	/* EAGAIN */
					fi;
#ifdef MUTANT_NAP_NO_PASS
					nap_end(0);
#else
					nap_end(pass);
#endif
					if
					:: pass -> break	/* EINTR: never waits again */
					:: else -> skip
					fi
				fi
			fi
		:: atomic { count == 0 -> skip } ->
			/* sleep section: bell__sleep_begin (count ourselves,
			 * re-check), epoll_wait, bell_took, bell__sleep_end */
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
end_sleep:			if
				:: atomic { db_pending == 1 -> db_pending = 0 };
					db_set = 0	/* bell_took */
				:: atomic { kready -> kready = 0 }
				:: atomic { tmo > 0 -> tmo-- }	/* timed out */
				fi;
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

/* A ctl that adds a kernel fd (krec_kctl: bell__kernel_add raises nkernel,
 * then bell__unnap), and the fd's event, which reaches the kernel epoll
 * only. */
proctype ctl()
{
	nkernel = 1;
#ifndef MUTANT_NAP_NO_UNNAP
	unnap();
#endif
	kready = 1
}

/* UNNOPOLL (bell__polled_outside): the option ends while in use. */
proctype unnopoll()
{
	nopoll = 0;
#ifndef MUTANT_UNNOPOLL_NO_UNNAP
	unnap();
#endif
	if
	:: count > 0 -> kick()
	:: else -> skip
	fi
}

/* Runs only when nothing else can move: every waiter is asleep (or all
 * done).  A queued item at that point is a lost wakeup. */
proctype monitor()
{
	timeout ->
	assert(count == 0);
	assert(kready == 0);
	assert(consumed == produced);
	assert(produced == (napok -> PER : NPROD * PER))
}

init
{
	atomic {
		byte i;
		byte cfg;
		if
		:: cfg = 0
		:: cfg = 1
		:: cfg = 2
		fi;
		if
		:: cfg == 2 -> nopoll = 1	/* NAP */
		:: cfg != 2 -> nopoll = 0
		:: cfg != 2 -> nopoll = 1
		fi;
		/* NAP: one producer (its other state is already large) */
		if
		:: cfg == 2 -> napok = 1; run producer()
		:: else -> for (i : 1 .. NPROD) { run producer() }
		fi;
		if
		:: cfg == 1 -> run outer()
		:: else ->
			for (i : 0 .. NWAIT - 1) { run waiter(i) }
		fi;
		if
		:: cfg == 2 ->
			if	/* a kernel fd, NOPOLL ended, or neither */
			:: sig = 1; tmo = 1; run ctl()
			:: sig = 1; tmo = 1
			/* (without the EINTR and the timeout: the state
			 * space would be four times as large) */
			:: run unnopoll()
			fi
		:: else -> skip
		fi;
		run monitor()
	}
}
