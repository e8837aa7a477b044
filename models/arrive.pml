/*
 * arrive.pml - a holder arrives while a wait on the instance dozes or naps
 * (src/bell.c: DOZE, NAP, WATCHED; issue 32, bugs 10 and 11), for the spin
 * model checker.  Checked exhaustively: when nothing can move any more, no
 * item is left queued (lost wakeup), the doorbell's eventfd is not left
 * counting on a level-triggered doorbell with nothing queued (a stuck ring:
 * the instance would read ready for ever, its holder woken on every look),
 * every item is consumed once, and an edge-triggered holder gets a doorbell
 * write after each event queued once it is registered.
 *
 * The instance starts unwatched, its doorbell edge-triggered in its kernel
 * epoll; one thread waits on it: a batching wait that dozes (its window's
 * end is an always-enabled step), or, on a NOPOLL instance, a wait that
 * naps on the futex word (a signal may end the nap with EINTR: the wait
 * then returns without collecting, and its caller never waits again).
 * Meanwhile a producer queues events and a holder arrives (bell_watch:
 * counted, nappers woken, the doorbell made level-triggered, taken, the
 * queue pruned and kicked; then the holder's kernel ADD, whose poll gives it
 * an edge if the doorbell reads non-zero).  The holder is another instance
 * holding it level-triggered, or a kernel epoll holding it EPOLLET through
 * uepoll_ctl (bell_held_outside: a watcher, edge-triggered, counted in
 * bell__nedge before `watched`).  Its thread wakes (level-triggered: while
 * the eventfd is non-zero, once per write; edge-triggered: on a write),
 * takes what is queued through waits on the instance, and the last of
 * those, settling (bell__mirror), takes the doorbell.
 *
 * Shared state, as in bell.c:
 *   count       items on the ready queue
 *   db_set      bell.set: the doorbell rung (written, or being written
 *               under dblock), its event not taken
 *   db_cnt      the doorbell's eventfd is non-zero
 *   db_pend     the doorbell's event is queued in the kernel epoll (what
 *               an epoll sleeper of an edge-triggered doorbell waits for)
 *   lt          bell.lt: the doorbell is level-triggered (watched)
 *   watched     bell.watched; wedge: bell__nedge
 *   registered  the holder's kernel registration exists
 *   db_edge     a write since the edge-triggered holder's last wakeup;
 *               mine: the producer's last event, queued after the
 *               registration, has had no write since (ghost)
 *   wgen        writes so far: a level-triggered sleeper wakes while the
 *               eventfd is non-zero and something is queued or it was
 *               written since the sleeper's last look (not for ever on a
 *               stuck eventfd: the monitor sees that)
 *   dblock      bell.dblock
 *   dozers, sleepers, nappers, napped, fseq (the futex word), inq/woken
 *               (the napper in FUTEX_WAIT / woken from it), sig (a signal
 *               left to deliver)
 * Each line between labels is one atomic step of the C code.
 * models/check.sh runs it, and each mutant, which must fail:
 *   MUTANT_DOZE_HOLDS_SET   a doze holds `set` = 1 and stores 0 on its way
 *                           out (before issue 32)
 *   MUTANT_NAP_TAKES_SET    a napper stores `set` = 0 to take a stale
 *                           doorbell and on its way out, and a nap's ring
 *                           goes through `set` (before issue 32)
 *   MUTANT_TOOK_NO_RECHECK  bell_took does not look at lt after its store
 *   MUTANT_KHOLD_UNWATCHED  a kernel epoll holding the instance EPOLLET is
 *                           only counted in bell__nedge, not as a watcher
 *                           (before issue 32)
 */
#define PER 2		/* events */

byte count;
byte produced;
byte consumed;
bit db_set;
bit db_cnt;
bit db_pend;
bit lt;
bit watched;
bit wedge;
bit registered;
bit db_edge;
bit mine;
byte wgen;
bit dblock;
byte dozers;
byte sleepers;
byte nappers;
bit napped;
byte fseq;
bit inq;
bit woken;
bit sig;
bit napcfg;	/* the waiter naps (NOPOLL instance); else it dozes */
bit etholder;	/* the holder is a kernel epoll holding it EPOLLET */
bit nopoll;

inline lock() {
	atomic { dblock == 0 -> dblock = 1 }
}

inline unlock() {
	dblock = 0
}

/* write(dbfd): the level, the edge-triggered doorbell's event, a wakeup of
 * the holders' callbacks. */
inline write_db() {
	atomic {
		db_cnt = 1;
		db_pend = 1;
		wgen++;
		if
		:: registered -> db_edge = 1
		:: else -> skip
		fi
	}
}

/* bell__ring_idle */
inline ring_idle() {
	lock();
	if
	:: atomic { db_set == 0 -> db_set = 1 } -> write_db()
	:: atomic { db_set == 1 -> skip }
	fi;
	unlock()
}

/* bell__ring */
inline ring() {
	lock();
	db_set = 1;
	write_db();
	unlock()
}

/* bell__take: under dblock, read(dbfd) (the kernel then drops the
 * doorbell's queued event: not ready), `set` = 0. */
inline take(always) {
	lock();
	if
	:: always || db_set ->
		atomic { db_cnt = 0; db_pend = 0 };
		db_set = 0
	:: else -> skip
	fi;
	unlock()
}

/* FUTEX_WAKE of the napper (the one waiter), if queued. */
inline futex_wake() {
	atomic {
		if
		:: inq -> inq = 0; woken = 1
		:: else -> skip
		fi
	}
}

/* bell__nap_ring */
inline nap_ring() {
#ifdef MUTANT_NAP_TAKES_SET
	if
	:: atomic { db_set == 0 -> db_set = 1 } -> fseq++; futex_wake()
	:: atomic { db_set == 1 -> skip }
	fi
#else
	if
	:: atomic { napped == 0 -> napped = 1 } -> fseq++; futex_wake()
	:: atomic { napped == 1 -> skip }
	fi
#endif
}

/* bell__kick: load `set` and nappers; bell__kick_slow: watched, the hold, a
 * napper's ring, or the doorbell's.  (k*: the loads, one step each.) */
inline kick() {
	if
	:: db_set == 0 || nappers > 0 ->
		kw = watched;
		kd = dozers;
		kn = nappers;
		if
#ifndef MUTANT_DOZE_HOLDS_SET
		:: !kw && kd > 0 -> skip	/* held */
#endif
		:: else ->
			if
#ifdef MUTANT_NAP_TAKES_SET
			:: kn > 0 && nopoll -> nap_ring()
#else
			:: !kw && kn > 0 && nopoll -> nap_ring()
#endif
			:: else ->
				if
				:: db_set == 0 -> ring_idle()
				:: else -> skip
				fi
			fi
		fi
	:: else -> skip
	fi
}

/* bell__clear */
inline clear() {
	if
	:: db_set == 1 ->
		take(0);
		if
		:: count > 0 -> kick()
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* wait__settle's bell__mirror (a watched instance only): prune (items kept:
 * kick), else clear. */
inline settle() {
	if
	:: watched ->
		if
		:: count > 0 -> kick()
		:: else -> clear()
		fi
	:: else -> skip
	fi
}

/* bell_took: the edge-triggered doorbell's event, taken by epoll_wait. */
inline took() {
	if
	:: !lt ->
		db_set = 0;
#ifndef MUTANT_TOOK_NO_RECHECK
		if
		:: lt ->	/* bell__retake */
			take(1);
			if
			:: count > 0 -> kick()
			:: else -> skip
			fi
		:: else -> skip
		fi
#endif
	:: else -> skip
	fi
}

proctype producer()
{
	byte i = 0;
	bit kw, kd, kn;
	do
	:: i < PER ->
		atomic { count++; produced++; mine = registered };
		/* bell__dozer_event: the event that ends the batch (or an
		 * urgent one) rings, held or not; not a watched instance's
		 * (its signal's own ring, next, wakes the dozer) */
		if
#ifdef MUTANT_DOZE_HOLDS_SET
		:: dozers > 0 ->
#else
		:: dozers > 0 && !watched ->
#endif
			if
#ifdef MUTANT_DOZE_HOLDS_SET
			:: ring()
#else
			:: ring_idle()
#endif
			:: skip
			fi
		:: else -> skip
		fi;
		/* bell__kick_edge */
		if
		:: watched ->
			if
#ifdef MUTANT_DOZE_HOLDS_SET
			:: wedge || dozers > 0 -> ring()
#else
			:: wedge -> ring()
#endif
			:: else ->
				if
				:: db_set == 0 -> ring_idle()	/* kick_db */
				:: else -> skip
				fi
			fi
		:: else -> kick()
		fi;
		assert(!etholder || !mine || db_edge);
		i++
	:: else -> break
	od
}

/* The wait on the instance: it dozes or naps once, then collects what is
 * queued and settles (unless EINTR ended its nap). */
proctype waiter()
{
	bit kw, kd, kn, pass;
	byte seq;
	if
	:: !napcfg ->
		/* bell__doze_begin, the re-check, the doze */
		dozers++;
#ifdef MUTANT_DOZE_HOLDS_SET
		db_set = 1;
#endif
		sleepers++;
		if
		:: count > 0 -> skip
		:: else ->
			if
			:: atomic { !lt && db_pend -> db_pend = 0 } -> took()
			:: atomic { lt && db_cnt -> skip }	/* readable */
			:: true -> skip			/* the window closes */
			fi
		fi;
		/* bell__doze_end */
		sleepers--;
		dozers--;
#ifdef MUTANT_DOZE_HOLDS_SET
		db_set = 0;
#endif
		if
		:: count > 0 && sleepers > 0 -> kick()
		:: else -> skip
		fi
	:: napcfg ->
		/* bell__nap_begin */
		seq = fseq;
		sleepers++;
		nappers++;
		if
		:: watched -> skip		/* gives up: an epoll sleep */
		:: else ->
#ifdef MUTANT_NAP_TAKES_SET
			db_set = 0;
#else
			napped = 0;
#endif
			if
			:: count > 0 -> skip
			:: else ->
				if
				:: atomic { fseq == seq -> inq = 1 } ->
end_nap:				if
					:: atomic { woken -> woken = 0 }
					:: atomic { inq && sig ->
						inq = 0; sig = 0; pass = 1 }
					fi
				:: atomic { fseq != seq -> skip }
				fi
			fi
		fi;
		/* bell__nap_end */
		sleepers--;
		nappers--;
#ifdef MUTANT_NAP_TAKES_SET
		db_set = 0;
#else
		napped = 0;
#endif
		if
		:: pass && count > 0 && sleepers > 0 -> kick()
		:: else -> skip
		fi
	fi;
	if
	:: pass -> skip		/* EINTR: returns without collecting */
	:: else ->
		atomic { consumed = consumed + count; count = 0 };
		settle()
	fi
}

/* The holder arrives: bell_watch (or, for a kernel epoll, its
 * bell_held_outside), then the kernel ADD. */
proctype watcher()
{
	bit kw, kd, kn;
	if
	:: etholder -> wedge = 1
	:: else -> skip
	fi;
#ifdef MUTANT_KHOLD_UNWATCHED
	if
	:: etholder -> goto add	/* counted in bell__nedge only */
	:: else -> skip
	fi;
#endif
	watched = 1;
	/* bell__unnap */
	if
	:: nappers > 0 -> atomic { fseq++; futex_wake() }
	:: else -> skip
	fi;
	lt = 1;			/* the MOD, then lt */
	take(1);
	if
	:: count > 0 -> kick()	/* rq_prune kept items */
	:: else -> skip
	fi;
add:
	atomic {
		registered = 1;
		if
		:: db_cnt -> db_edge = 1	/* the ADD's poll */
		:: else -> skip
		fi
	}
}

/* The holder's thread: woken by a write (edge-triggered) or while the
 * eventfd is non-zero (level-triggered, once per write), it takes what is
 * queued through waits on the instance; the last settles. */
proctype holder()
{
	byte seen = 255;
	bit kw, kd, kn;
	do
	:: etholder ->
end_et:		atomic { db_edge -> db_edge = 0; mine = 0 };
		atomic { consumed = consumed + count; count = 0 };
		settle()
	:: !etholder ->
end_lt:		atomic { registered && db_cnt && (wgen != seen || count > 0) ->
			 seen = wgen };
		atomic { consumed = consumed + count; count = 0 };
		settle()
	od
}

proctype monitor()
{
	timeout ->
	assert(count == 0);
	assert(!(lt && db_cnt));	/* no ring stuck in the eventfd */
	assert(consumed == produced);
	assert(produced == PER)
}

init
{
	atomic {
		if
		:: napcfg = 0
		:: napcfg = 1; nopoll = 1; sig = 1
		:: napcfg = 1; nopoll = 1
		fi;
		if
		:: etholder = 0
		:: etholder = 1
		fi;
		run producer();
		run waiter();
		run watcher();
		run holder();
		run monitor()
	}
}
