/*
 * unpend.pml - UNPEND (src/unpend.c): an edge-triggered item of a ueventfd
 * becomes a registration of its kernel fd in its instance's kernel epoll
 * (a fork shares the ueventfd, an exec demotes it: src/port.c,
 * port__take_source and port_demote), without the report the kernel's ADD
 * gives a ready fd, for spin.
 *
 * The fd is ready throughout (the case that matters: an ADD of a fd that is
 * not ready queues nothing).  The item starts queued in its instance (its
 * edge not taken yet) or not (taken), chosen by init.  The converter C:
 * makes the probe (a private epoll of the fd, its own ADD's report taken:
 * queued from then on only by an edge), unlinks the item (taken: it was
 * not queued; a queued one is retired, never delivered, and the ADD's
 * report stands for it), then, taken, hands the probe to the record and
 * ADDs (queued: the fd is ready), and settles: one harvest of the epoll
 * takes every queued entry; its own one is dropped unless the probe is
 * queued (an edge came since the probe), every other is queued again (MOD:
 * the fd is ready); the probe is taken by exchange, and closed; if its own
 * entry was not there, the probe stays with the record (a wait that took
 * the entry has yet to look at it).  Not taken:
 * the probe is closed and the ADD's report stands.  Another registration K
 * of the same epoll (a kernel fd, edge-triggered, ready), queued or not,
 * stands for the program's other registrations, which the settle's harvest
 * must not lose.  The writer W writes once (an edge): it queues the item
 * if the item is still linked, the registration if it is made, the probe
 * if it exists, and K's entry.  The waiter R (a wait of the instance, any
 * time) takes the item if queued, or an entry of the epoll: its own
 * record's probe, if it gets it by exchange, decides as the settle does.
 * Checked:
 *  - no report without an edge: with no write and the item's edge taken,
 *    no report is ever delivered, and at the end nothing is queued;
 *  - no edge lost: an edge owed (the item queued at the start, or a write)
 *    is delivered after it, or still queued at the end; K's too.
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_PROBE_AFTER_UNLINK the probe made after the item left its
 *                             instance: a write in between is nobody's;
 *   MUTANT_SETTLE_BLIND       the settle drops its entry without looking at
 *                             the probe: a write before the harvest is lost;
 *   MUTANT_WAIT_BLIND         a wait delivers its record's entry without
 *                             looking: the ADD's report is delivered;
 *   MUTANT_NO_REQUEUE         the settle does not queue again what else it
 *                             harvested: K's edge is lost;
 *   MUTANT_SETTLE_CLOSES      a settle that did not find its report closes
 *                             the probe: the wait that took the report finds
 *                             no probe, and delivers the ADD's report.
 */
bit upend;	/* the item queued in its instance (userspace) */
bit inlist = 1;	/* the item still in its instance */
bit reg;	/* the kernel registration made */
bit rpend;	/* its entry queued in the kernel epoll */
bit pexists;	/* the probe exists */
bit ppend;	/* the probe queued (an edge since it was made) */
bit probe;	/* the record holds the probe (exchange: whoever takes it) */
bit kpend;	/* K's entry queued */
bit owed;	/* an edge not delivered yet (the item's or a write's) */
bit kowed;	/* K's */
bit wrote;	/* W wrote */
byte done;

inline deliver()
{
	/* a report with no edge behind it, ever: spurious */
	assert(owed || wrote);
	owed = 0
}

/* The settle's or a wait's look at the probe it took: an edge since? */
inline decide(keep)
{
	keep = ppend;
	pexists = 0
}

proctype converter()
{
	bit taken, got, keep, mine;

#ifndef MUTANT_PROBE_AFTER_UNLINK
	atomic { pexists = 1; ppend = 0 };
#endif
	atomic {
		inlist = 0;
		taken = !upend;
		upend = 0
	};
#ifdef MUTANT_PROBE_AFTER_UNLINK
	atomic { pexists = 1; ppend = 0 };
#endif
	if
	:: taken ->
		probe = 1;
		atomic { reg = 1; rpend = 1 };
		/* settle: one harvest of the epoll */
		atomic {
			got = rpend;
			rpend = 0;
			kowed = kowed; /* (K harvested below, same step) */
			if
			:: kpend -> kpend = 0;
#ifndef MUTANT_NO_REQUEUE
				kpend = 1 /* MOD: queued again (ready) */
#else
				skip
#endif
			:: else -> skip
			fi
		};
		if
		:: got ->
			atomic { mine = probe; probe = 0 };
			if
			:: mine ->
#ifndef MUTANT_SETTLE_BLIND
				decide(keep);
#else
				keep = 0; pexists = 0;
#endif
				if
				:: keep -> rpend = 1
				:: else -> skip
				fi
			:: else -> rpend = 1
			fi
		:: else -> skip
		fi
#ifdef MUTANT_SETTLE_CLOSES
		;
		/* its report not found: the probe closed all the same */
		atomic { mine = probe; probe = 0 };
		if
		:: mine -> pexists = 0
		:: else -> skip
		fi
#endif
		/* (else the record keeps it for its next report) */
	:: else ->
		pexists = 0;
		atomic { reg = 1; rpend = 1 }
	fi;
	atomic { done++ }
}

proctype writer()
{
	atomic {
		wrote = 1;
		owed = 1;
		kowed = 1;
		if
		:: inlist -> upend = 1
		:: else -> skip
		fi;
		if
		:: reg -> rpend = 1
		:: else -> skip
		fi;
		if
		:: pexists -> ppend = 1
		:: else -> skip
		fi;
		kpend = 1
	};
	atomic { done++ }
}

proctype waiter()
{
	byte i;
	bit got, mine, keep;

	for (i : 1 .. 2) {
		if
		:: atomic { inlist && upend -> upend = 0; deliver() }
		:: atomic { kpend -> kpend = 0; kowed = 0 }
		:: atomic { rpend -> rpend = 0; got = 1 };
			atomic { mine = probe; probe = 0 };
			if
#ifndef MUTANT_WAIT_BLIND
			:: mine -> decide(keep);
				if
				:: keep -> deliver()
				:: else -> skip
				fi
#endif
			:: else -> deliver()
			fi;
			got = 0
		:: skip
		fi
	}
	atomic { done++ }
}

init
{
	bit owed0;

	if
	:: upend = 1; owed = 1
	:: skip
	fi;
	if
	:: kpend = 1; kowed = 1
	:: skip
	fi;
	owed0 = owed;
	atomic {
		run converter();
		if
		:: run writer()
		:: done++
		fi;
		run waiter()
	};
	done == 3;
	/* no edge lost */
	assert(!owed || rpend);
	assert(!kowed || kpend);
	/* nothing queued without an edge */
	assert(wrote || owed0 || !rpend)
}
