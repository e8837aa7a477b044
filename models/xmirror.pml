/*
 * xmirror.pml - XMIRROR, the mirror protocol of a ueventfd shared by
 * processes after a fork (issues 21 and 32), for the spin model checker.
 * The counter block is in shared memory; the kernel eventfd (the mirror,
 * the fd the user polls) is one file for all.  Two processes: a writer (two
 * writes, each of 1 or of what fills the counter) and a reader (a
 * non-blocking read, then a blocking one that sleeps on a futex word), for
 * a semaphore and a non-semaphore ueventfd (init chooses; the kernel fd has
 * the same EFD_SEMAPHORE).  At any step one of them, or none, is killed
 * (and never reaped: its lock is released by the kernel at its exit, as a
 * robust futex's is, zombie or not: ROBUST), or stopped (SIGSTOP, a
 * debugger), and then maybe continued.  Checked exhaustively:
 *  - at every step: count > 0 => K > 0 (readable never missed) unless a
 *    stopped holder was bypassed (then only at rest, below), and K == FULL
 *    => count == FULL (writable never missed) except while a holder, live,
 *    stopped or dead and not yet repaired, or a bypassing read, is between
 *    the CAS that leaves a full counter and the drain of K (non-semaphore;
 *    semaphore: once a bypass came);
 *  - a write(2) to the kernel fd never makes K exceed FULL (it would block);
 *  - at the end (the live processes done, or the reader asleep), after a
 *    death the next operation's settle under the lock: count > 0 => K > 0;
 *    with no process stopped, class(K) == class(count) (but a bypass's fill,
 *    left to the next settle: too writable), kf == K (or recheck set), and
 *    every value written by a write that returned was taken or is still in
 *    count (pdone <= consumed + count <= pstart);
 *  - no live process waits for ever: `final` finds every process finished,
 *    dead, stopped, or the reader asleep with nothing to read (a stopped
 *    process never reaches an end state: pan runs with -E).
 *
 * Shared state:
 *   count   the counter (FULL stands for 0xfffffffffffffffe)
 *   K       the kernel eventfd's counter: a write(2) adds, a non-blocking
 *           read(2) takes all (1 if semaphore) or is EAGAIN at 0
 *   xsl, rwake  the library's blocked readers (SHARED sleepers): counted in
 *           xsl, asleep on the futex word rwake, which a write that took
 *           the counter from 0 bumps (and wakes) after its CAS, if xsl > 0.
 *           They never sleep on K: a pre-step's raise, made before the
 *           CAS for other libraries' pollers, would wake them too early.
 *   kf      the library's belief of K (kunits), written by the lock holder
 *   xlock   0, or the pid (1 writer, 2 reader, 3 the final check) of the
 *           holder of the robust lock xm; odied: released by a death, the
 *           next locker repairs (kf := K, as read in fdinfo, and settles)
 *   dead, stopped  the pid killed, or stopped (0: none).  The victim's
 *           steps are inside `unless`; a stopped process is not `provided`.
 *   recheck, braise, fwatch, fdirty  BYPASS (below)
 * Lock-free ops stay in class 1: a write of v when 1 <= c and c + v < FULL,
 * a read when c < FULL and c - take >= 1.  Others take the lock, then:
 * pre-step (0 -> v: raise K to 1 if kf == 0; FULL -> c > 0, semaphore:
 * lower K to class 1), CAS of count (reload and retry), post-step sync of
 * K's class to count's (each round first reads K again if recheck is set),
 * unlock (then settle again if recheck is set).  A live holder is waited
 * for (FUTEX_WAIT, woken by its unlock or by the kernel at its death).
 *
 * BYPASS: a holder that is stopped is not waited for (nor, in the C code,
 * one that holds the lock too long, stopped or not: modelled as a stopped
 * holder continued at once after the bypass decided; what only that adds,
 * a holder stopped again later, is below).  The operation sets
 * recheck, makes K readable before its CAS if it leaves 0 (if K is 0: a
 * look then a write), or writable if a semaphore counter leaves FULL (if
 * K is FULL: a look then a read of 1; again after the CAS, where a
 * holder's fill decided before may have come); after a CAS that leaves 0
 * it drains K (until EAGAIN), sets recheck and looks at count again,
 * making K readable if it is non-zero (the drain may have taken the unit of
 * a holder's pre-step, or of another bypass); after a CAS from 0 it looks
 * at K again and makes it readable (a continued holder's drain may have
 * taken its unit); a fill is left to the next settle.  Then it settles
 * under the lock if that is free.  FILL: K never passes FULL (a write(2)
 * past it blocks) whatever bypasses raise (a unit each, on a look that
 * found K at 0; counted in braise, in flight, from before the look): a
 * holder fills only while none is in flight and none began since before it
 * read K (fdirty: the C code compares the count of raises ever begun), to
 * FULL - 1 - MARGIN, then the rest only if still none began (a raise begun
 * after the first step finds K readable);
 * else the fill is left to the bypass, which sets recheck before it
 * uncounts itself and then settles if the lock is free.
 *
 * Change to the draft (xmirror-spec.md), found by this model: with a
 * non-semaphore kernel fd, lowering K from FULL is a read(2) that takes all,
 * so K goes through 0.  The draft's pre-step (read, write back 1, CAS
 * count FULL -> 0, drain) leaves K == 0 with count == FULL between the read
 * and the write back, and for good if the reader dies there.  No order
 * avoids a miss there; the one kept misses writability instead: a
 * non-semaphore read that empties a full counter does no pre-step, CASes
 * FULL -> 0, then drains K.  MUTANT_LOWER_FIRST is the draft's order.
 *
 * (xbypass.pml has the mutants that need two bypasses at once: NO_POSTLOOK,
 * NO_RELOOK, NO_MARGIN.  xnopoll.pml: the same counter under
 * UEVENTFD_NOPOLL, whose changes of class leave K alone until a process
 * ends NOPOLL; this model is the protocol from that end on.)
 * Not modelled: the signal handler path (a bypass, as for a stopped holder:
 * the handler's thread is the holder, stopped until the handler returns),
 * demotion, blocking writes (the writes here are EAGAIN when they would
 * pass FULL), a process both stopped and killed, thread id reuse, a holder
 * stopped twice.  The last is a known window (a model with a holder
 * bypassed while running, then stopped, found it): a holder's settle round
 * that decided to drain K on a counter of 0, a bypassing write from 0 that
 * raised K and looked at it before that drain, and the holder stopped
 * right after the drain: K is not readable over a non-zero counter until
 * it is continued (it owes the settle: recheck is set).
 * Each statement is one atomic step of the C code (a load, a store, a CAS,
 * one system call); an atomic block with a guard on shared state is a load
 * with what it decides, or a CAS.
 * PAN_FLAGS: -E
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_RAISE_AFTER     the 0 -> v write raises K after its CAS
 *   MUTANT_DRAIN_BEFORE    the read that empties the counter drains K
 *                          before its CAS
 *   MUTANT_NO_REPAIR       a locker that finds odied does not set kf := K
 *   MUTANT_ZOMBIE_HOLDS    a dead holder keeps the lock (kill(tid, 0) of a
 *                          zombie says alive, as before issue 32)
 *   MUTANT_WAIT_STOPPED    a locker waits for a stopped holder
 *   MUTANT_NO_FRESH        a holder does not read K again after a bypass
 *   MUTANT_FILL_ANYWAY     a holder fills K while a bypass raises it
 *   MUTANT_LOCKFREE_CROSS  the lock-free write also accepts c == 0
 *   MUTANT_WAKE_BEFORE_CAS the writer wakes the sleepers before its CAS
 *   MUTANT_NO_XSL          the sleeper does not count itself
 *   MUTANT_SEQ_AFTER       the sleeper reads the futex word after its look
 *                          at the counter
 *   MUTANT_LOWER_FIRST     the draft's order: a non-semaphore read leaving
 *                          FULL lowers K (read, write back 1) before its CAS
 */
/* (xbypass.pml: more, so that the raises of three processes at once, a
 * unit each, do not reach it, as they do not reach 0xfffffffffffffffe.) */
#ifndef FULL
#define FULL 3
#endif
/* FILL's first step leaves room for this many raises, beyond one, that
 * looked at K before it wrote (two processes may bypass at once in
 * xbypass.pml: 1; the C code: 2^40). */
#ifndef MARGIN
#define MARGIN 0
#endif
#define CLS(x)	((x) == 0 -> 0 : ((x) >= FULL -> 2 : 1))

byte count;
byte K;
byte kf;
byte xlock;
byte dead;
byte stopped;		/* the pid of the stopped process, 0 if none */
bit odied;		/* FUTEX_OWNER_DIED: the kernel released a dead
			 * holder's lock; the next locker repairs (ROBUST) */
bit recheck;		/* a change of class made without the lock (BYPASS) */
bit bypassed;		/* ghost: some operation bypassed a stopped holder */
byte braise;		/* bypasses raising K now (BYPASS) */
byte fwatch;		/* holders filling (bit 1 << pid) ... */
byte fdirty;		/* ... and those since whose first look a raise
			 * began (the C code: braise's high half changed) */
bit bywin;		/* ghost: a bypass read between the CAS that emptied the
			 * counter and its drain (the allowance of a holder's) */
bit sem;
bit sleeping;		/* the reader is asleep on the futex word rwake */
byte xsl;		/* SHARED sleepers counted (xsleepers) */
byte rwake;		/* the sleepers' futex word */
bit tmo;		/* the sleeper's one timeout after a death */
bit fin[3];		/* fin[p]: process p finished its operations */
byte pstart;		/* values added to count */
byte pdone;		/* values of writes that returned */
byte consumed;		/* values taken from count */

/* At every step.  The writability miss (non-semaphore, K FULL over an
 * emptied counter) is allowed only inside a locked section, of a live or a
 * dead holder. */
#define INV	((count == 0 || K > 0 || bypassed) && \
		 (K < FULL || count == FULL || \
		  ((!sem || bypassed) && (xlock != 0 || odied || bywin || \
					   (bypassed && (recheck || braise > 0))))))

/* write(kfd, x) */
inline kwrite(x) {
	atomic { assert(K + x <= FULL); K = K + x }
}

/* non-blocking read(kfd): kv = what it took, 0 for EAGAIN */
inline kread() {
	if
	:: atomic { K > 0 -> kv = (sem -> 1 : K); K = K - kv }
	:: atomic { K == 0 -> kv = 0 }
	fi
}

/* Lower K from FULL to class 1: read, write back what is missing. */
inline lower() {
	kread();
	if
	:: kf - kv > 0 && kv > 0 -> kf = kf - kv
	:: else -> kwrite(1); kf = 1
	fi
}

/* Post-step sync, under xlock: bring K's class to count's, on kf. */
/* BYPASS: kf is read again (fdinfo) if a bypass came since the last
 * look. */
inline xfresh() {
	if
	:: atomic { recheck -> recheck = 0 };
#ifdef MUTANT_NO_FRESH
		skip
#else
		kf = K
#endif
	:: atomic { !recheck -> skip }
	fi
}

inline lsync() {
	do
	:: xfresh();
		c = count;
		if
		:: CLS(c) == CLS(kf) -> break
		:: c == 0 && kf > 0 ->			/* drain */
			kread();
			kf = (kv == 0 || kv >= kf -> 0 : kf - kv)
		:: c == FULL && kf < FULL ->		/* raise */
			/* FILL: never past FULL (a write(2) past it blocks),
			 * whatever bypasses raise meanwhile: none in flight,
			 * none begun since before K was read; in two steps,
			 * so that a raise begun after the first finds K
			 * readable and writes nothing.  Else left to the
			 * bypass's settle (K too writable meanwhile). */
#ifdef MUTANT_FILL_ANYWAY
			kf = K;
			kwrite(FULL - kf);
			kf = FULL
#else
			/* (braise and the raises begun are one word in the
			 * C code: each look reads both at once.) */
			if
			:: atomic { braise > 0 -> skip }; break
			:: atomic { braise == 0 -> fwatch = fwatch | (1 << me);
					fdirty = fdirty & ~(1 << me) };
				kf = K;			/* fdinfo */
				if
				:: atomic { braise > 0 || (fdirty & (1 << me)) ->
					fwatch = fwatch & ~(1 << me);
					fdirty = fdirty & ~(1 << me) }	/* again */
				:: atomic { braise == 0 && !(fdirty & (1 << me)) -> skip };
					/* Room for MARGIN + 1 raises that
					 * looked before this write. */
					if
					:: kf < FULL - 1 - MARGIN ->
						kwrite(FULL - 1 - MARGIN - kf);
						kf = FULL - 1 - MARGIN
					:: else -> skip
					fi;
					if
					:: atomic { braise == 0 && !(fdirty & (1 << me)) ->
						fwatch = fwatch & ~(1 << me) };
						/* (none began since: K is kf) */
						kwrite(FULL - kf);
						kf = FULL
					:: atomic { braise > 0 || (fdirty & (1 << me)) ->
						fwatch = fwatch & ~(1 << me);
						fdirty = fdirty & ~(1 << me) }; break
					fi
				fi
			fi
#endif
		:: c > 0 && c < FULL && kf == 0 ->
			kwrite(1);
			kf = 1
		:: c > 0 && c < FULL && kf == FULL ->
			lower()
		fi
	od
}

/* Takeover of a dead holder's lock: repair kf from fdinfo, then sync. */
inline repair() {
#ifndef MUTANT_NO_REPAIR
	kf = K;
#endif
	lsync()
}

/* Take the lock; byp = 1 instead if its holder is stopped and `may` (a
 * bypass), ROBUST: a lock the kernel released at its holder's death is
 * taken with odied, and repaired. */

inline lock(may, b) {
	b = 0;
	do
	:: atomic { xlock == 0 -> xlock = me; died = odied; odied = 0 } ->
		if
		:: died -> repair()
		:: else -> skip
		fi;
		break
	:: atomic { xlock != 0 -> t = xlock } ->
		if
#ifndef MUTANT_WAIT_STOPPED
		:: may && t == stopped ->		/* /proc: 'T' */
			b = 1; bypassed = 1; break
#endif
		:: else ->				/* FUTEX_WAIT */
#ifdef MUTANT_WAIT_STOPPED
			atomic { xlock != t -> t = 0 }
#else
			atomic { xlock != t || (may && t == stopped) -> t = 0 }
#endif
		fi
	od
}

/* Unlock; a bypass meanwhile: settle again (uefd__xunlock). */
inline unlock() {
	xlock = 0;
	do
	:: recheck ->
		lock(1, byp2);
		if
		:: !byp2 -> lsync(); xlock = 0
		:: else -> break
		fi
	:: else -> break
	od
}

/* BYPASS: K readable if it is not (a holder about to fill it makes it
 * readable itself). */
inline byraise() {
	atomic { braise = braise + 1; fdirty = fdirty | fwatch };
	if
	:: atomic { K == 0 -> skip }; kwrite(1)
	:: atomic { K > 0 -> skip }
	fi;
	/* (Before the uncount: a fill left to the next settle is owed from
	 * here, whoever settles.) */
	recheck = 1;
	braise = braise - 1
}

/* BYPASS, at its end: settle under the lock if it is free (uefd__xowe). */
inline xowe() {
	recheck = 1;
	if
	:: atomic { xlock == 0 -> xlock = me; died = odied; odied = 0 } ->
		if
		:: died -> repair()
		:: else -> lsync()
		fi;
		unlock()
	:: atomic { xlock != 0 -> skip }
	fi
}

/* BYPASS, a write from 0 (up): readable before the CAS, looked at after. */
inline bywr() {
	recheck = 1;
	byraise();
	if
	:: atomic { count == c -> count = c + v; pstart = pstart + v; r = 1 }
	:: atomic { count != c -> skip }
	fi;
#ifndef NO_POSTLOOK
	if
	:: r && c == 0 -> byraise()
	:: else -> skip
	fi;
#endif
	/* The counter left 0: wake the counted sleepers. */
	if
	:: r && c == 0 && xsl > 0 -> rwake = rwake + 1
	:: else -> skip
	fi;
	xowe()
}

/* A write of 1, or of what fills the counter at the first load. */
inline wr(fill) {
	v = 0;
	r = 0;
	do
	:: atomic { c = count; if :: v == 0 -> v = (fill -> FULL - c : 1) :: else -> skip fi };
		if
		:: v == 0 -> break			/* already full: nothing */
		:: c + v > FULL -> break		/* EAGAIN */
#ifdef MUTANT_LOCKFREE_CROSS
		:: c + v < FULL ->
#else
		:: c >= 1 && c + v < FULL ->
#endif
			if
			:: atomic { count == c -> count = c + v; pstart = pstart + v; r = 1 } -> break
			:: atomic { count != c -> skip }
			fi
		:: else ->
			lock(1, byp);
			if
			:: byp ->
				bywr()
			:: else ->
				do
				:: c = count;
					xfresh();
					if
					:: c + v > FULL -> break	/* EAGAIN */
					:: else ->
#ifndef MUTANT_RAISE_AFTER
						if
						:: c == 0 && kf == 0 -> kwrite(1); kf = 1
						:: else -> skip
						fi;
#endif
#ifdef MUTANT_WAKE_BEFORE_CAS
						if
						:: c == 0 && xsl > 0 -> rwake = rwake + 1
						:: else -> skip
						fi;
#endif
						if
						:: atomic { count == c -> count = c + v; pstart = pstart + v; r = 1; from0 = (c == 0) } -> break
						:: atomic { count != c -> skip }
						fi
					fi
				od;
#ifdef MUTANT_RAISE_AFTER
				if
				:: r && c == 0 && kf == 0 -> kwrite(1); kf = 1
				:: else -> skip
				fi;
#endif
				lsync();
				unlock();
#ifndef MUTANT_WAKE_BEFORE_CAS
				/* The counter left 0: wake the counted sleepers. */
				if
				:: r && from0 && xsl > 0 -> rwake = rwake + 1
				:: else -> skip
				fi;
#endif
			fi;
			if
			:: r || !byp -> break		/* (a bypass whose CAS failed: again) */
			:: else -> skip
			fi
		fi
	od;
	if
	:: r -> pdone = pdone + v
	:: else -> skip
	fi
}

/* BYPASS, a read: a semaphore counter leaving FULL makes K writable
 * first; one that reached 0 drains K (until EAGAIN) after its CAS, then
 * looks at the counter again and makes K readable if it is non-zero. */
inline byrd() {
	recheck = 1;
	tk = (sem -> 1 : c);
	if
	:: sem && c == FULL ->
		if
		:: atomic { K == FULL -> skip }; kread()
		:: atomic { K < FULL -> skip }
		fi
	:: else -> skip
	fi;
	if
	:: atomic { count == c -> count = c - tk; consumed = consumed + tk; r = 1; bywin = (c == tk || (sem && c == FULL)) }
	:: atomic { count != c -> skip }
	fi;
	/* A holder's fill decided before the CAS: writable again. */
	if
	:: r && sem && c == FULL ->
		if
		:: atomic { K == FULL -> skip }; kread()
		:: atomic { K < FULL -> skip }
		fi;
		bywin = 0
	:: else -> skip
	fi;
	if
	:: r && c == tk ->
		do
		:: kread();
			if
			:: kv == 0 -> break
			:: else -> skip
			fi
		od;
		bywin = 0;
		/* Dekker with a holder's CAS then xfresh: it sees this, or
		 * this look sees its CAS. */
		recheck = 1;
#ifndef NO_RELOOK
		if
		:: count > 0 -> byraise()
		:: else -> skip
		fi
#endif
	:: else -> skip
	fi;
	xowe()
}

/* A read: r = 1 if it took, 0 for EAGAIN.  nb: non-blocking (its empty
 * case looks at the holder's liveness). */
inline rd(nb) {
	r = 0;
	do
	:: c = count;
		if
		:: c == 0 ->
			/* A holder at work (live: waited for; dead: its lock
			 * taken, ROBUST; stopped: bypassed) before the answer
			 * (uefd__xsync). */
			if
			:: nb && (xlock != 0 || odied) ->
				lock(1, byp);
				if
				:: byp -> recheck = 1
				:: else -> lsync(); unlock()
				fi
			:: else -> skip
			fi;
			break					/* EAGAIN */
		:: c > 0 && c < FULL && c - (sem -> 1 : c) >= 1 ->
			if
			:: atomic { count == c -> tk = (sem -> 1 : c); count = c - tk; consumed = consumed + tk; r = 1 } -> break
			:: atomic { count != c -> skip }
			fi
		:: else ->
			lock(1, byp);
			if
			:: byp -> byrd()
			:: else -> skip
			fi;
			if
			:: byp && r -> break
			:: byp -> skip			/* its CAS failed: again */
			:: else ->
			do
			:: c = count;
				xfresh();
				if
				:: c == 0 -> break		/* EAGAIN */
				:: else ->
					tk = (sem -> 1 : c);
					if
					:: c == FULL && c - tk > 0 ->
						lower()		/* semaphore */
#ifdef MUTANT_LOWER_FIRST
					:: c == FULL && c - tk == 0 ->
						lower()		/* the draft */
#endif
					:: else -> skip
					fi;
#ifdef MUTANT_DRAIN_BEFORE
					if
					:: c - tk == 0 ->
						do
						:: kf > 0 -> kread(); kf = (kv == 0 || kv >= kf -> 0 : kf - kv)
						:: else -> break
						od
					:: else -> skip
					fi;
#endif
					if
					:: atomic { count == c -> count = c - tk; consumed = consumed + tk; r = 1 } -> break
					:: atomic { count != c -> skip }
					fi
				fi
			od;
			lsync();
			unlock();
			break
			fi
		fi
	od
}

proctype writer() provided (stopped != 1)
{
	byte me = 1;
	byte c, v, t, kv;
	bit r, from0, byp, byp2, died;

	{
		if
		:: wr(0)
		:: wr(1)
		fi;
#ifndef THREE
		if
		:: wr(0)
		:: wr(1)
		fi;
#endif
		fin[me] = 1
	} unless { dead == me }
}

proctype reader() provided (stopped != 2)
{
	byte me = 2;
	byte c, t, tk, kv, seq;
	bit r, byp, byp2, died;

	{
#ifndef THREE
		rd(1);
#endif
		/* a blocking read */
		do
		:: rd(0);
			if
			:: r -> break
			:: else -> skip
			fi;
			/* Over-readiness a holder left, or a holder at work:
			 * settled first (uefd__xsync). */
			if
			:: xlock != 0 || odied || recheck ||
			   CLS(count) != CLS(kf) ->
				lock(1, byp);
				if
				:: byp -> recheck = 1
				:: else -> lsync(); unlock()
				fi
			:: else -> skip
			fi;
#ifndef MUTANT_SEQ_AFTER
			seq = rwake;
#endif
#ifndef MUTANT_NO_XSL
			xsl = xsl + 1;
#endif
			if
			:: count > 0 -> skip		/* take it */
			:: else ->
#ifdef MUTANT_SEQ_AFTER
				seq = rwake;
#endif
				sleeping = 1;
				/* FUTEX_WAIT while rwake == seq; its timeout
				 * (1 s) matters only once the waker died or
				 * stopped between its CAS and its wake
				 * (once). */
end_sleep:			atomic { rwake != seq || (((dead != 0 && dead != 2) || (stopped != 0 && stopped != 2)) && !tmo) ->
					if
					:: rwake == seq -> tmo = 1
					:: else -> skip
					fi;
					sleeping = 0 }
			fi;
#ifndef MUTANT_NO_XSL
			xsl = xsl - 1
#endif
		od;
		fin[me] = 1
	} unless { dead == me }
}

/* One process, or none, is killed at any step (the kernel releases a robust
 * lock it holds at its exit, zombie or not: ROBUST), or stopped at any
 * step, and maybe continued later. */
inline kill(p) {
	atomic {
		dead = p;
#ifndef MUTANT_ZOMBIE_HOLDS
		if
		:: xlock == p -> xlock = 0; odied = 1
		:: else -> skip
		fi
#endif
	}
}

#ifdef THREE
/* xbypass.pml: a third process makes one write and is stopped at any step
 * (maybe continued): the writer and the reader may both bypass it. */
proctype holder() provided (stopped != 4)
{
	byte me = 4;
	byte c, v, t, kv;
	bit r, from0, byp, byp2, died;

	wr(0);
	fin[0] = 1
}

proctype killer()
{
	stopped = 4;
	if
	:: stopped = 0
	:: skip
	fi
}
#else
proctype killer()
{
	if
	:: kill(1)
	:: kill(2)
	:: stopped = 1; if :: stopped = 0 :: skip fi
	:: stopped = 2; if :: stopped = 0 :: skip fi
	:: skip
	fi
}
#endif

/* Blocked unless the invariant fails. */
proctype invariant()
{
end:	atomic { !(INV) -> assert(false) }
}

/* Runs only when nothing else can move.  After a death the next operation
 * settles first (its lock taken with odied: ROBUST); a stopped process
 * may have left K too ready, never not ready. */
proctype final()
{
	byte me = 3;
	byte c, kv, t;
	bit byp, byp2, died;

	timeout ->
	assert(fin[1] || dead == 1 || stopped == 1);
	assert(fin[2] || dead == 2 || stopped == 2 || sleeping);
#ifdef THREE
	assert(fin[0] || stopped == 4);
#endif
	if
	:: dead != 0 ->
		assert(xlock == 0);	/* released: ROBUST */
		lock(0, byp); lsync(); unlock()
	:: else -> skip
	fi;
	assert(count == 0 || K > 0);
	assert(K < FULL || count == FULL ||
	       ((!sem || bypassed) && (xlock != 0 || odied || bywin ||
				       (bypassed && (recheck || braise > 0)))));
	if
	:: stopped == 0 ->
		/* A bypass's fill is left to the next settle: too writable. */
		assert(CLS(K) == CLS(count) ||
		       (recheck && count == FULL && K > 0));
		assert(kf == K || recheck)
	:: else -> skip
	fi;
	assert(!(sleeping && dead != 2 && stopped != 2 && count > 0));
	assert(pdone <= consumed + count && consumed + count <= pstart)
}

init
{
	atomic {
		if
		:: sem = 0
#ifndef THREE
		:: sem = 1
#endif
		fi;
		run writer();
		run reader();
#ifdef THREE
		run holder();
#endif
		run killer();
		run invariant();
		run final()
	}
}
