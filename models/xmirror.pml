/*
 * xmirror.pml - XMIRROR, the mirror protocol of a ueventfd shared by
 * processes after a fork (issue 21), for the spin model checker.  The
 * counter block is in shared memory; the kernel eventfd (the mirror, the fd
 * the user polls) is one file for all.  Any process may die at any step.
 * Two processes: a writer (two writes, each of 1 or of what fills the
 * counter) and a reader (a non-blocking read, then a blocking one that
 * sleeps on a futex word), for a semaphore and a non-semaphore ueventfd (init
 * chooses; the kernel fd has the same EFD_SEMAPHORE).  One of them, or
 * none, is killed at any step.  Checked exhaustively:
 *  - at every step: count > 0 => K > 0 (readable never missed), and
 *    K == FULL => count == FULL (writable never missed) except while a
 *    holder of xlock, live or dead, is between the CAS that empties a full
 *    non-semaphore counter and the drain of K (see below);
 *  - a write(2) to the kernel fd never makes K exceed FULL;
 *  - at the end (the live processes done, or the reader asleep),
 *    after a later operation's takeover of a lock a dead process still
 *    holds: class(K) == class(count), kf == K, and every value written by a
 *    write that returned was taken or is still in count
 *    (pdone <= consumed + count <= pstart);
 *  - no live process waits forever (an invalid end state: e.g. a locker
 *    waiting for a dead holder).
 *
 * Shared state:
 *   count   the counter (FULL stands for 0xfffffffffffffffe)
 *   K       the kernel eventfd's counter: a write(2) adds, a non-blocking
 *           read(2) takes all (1 if semaphore) or is EAGAIN at 0
 *   xsl, rwake  the library's blocked readers (SHARED sleepers): counted in
 *           xsl, asleep on the futex word rwake, which a write that took
 *           the counter from 0 bumps (and wakes) after its CAS, if xsl > 0.
 *           They never sleep on K: a pre-step's raise, made before the
 *           CAS for other libraries' pollers, would wake them too early
 *           (and, on one CPU, preempt the writer).
 *   kf      the library's belief of K, written only by the xlock holder
 *   xlock   0, or the pid (1 writer, 2 reader, 3 the final check) of the
 *           holder
 *   dead    the pid of the killed process, 0 if none: kill(t, 0) == ESRCH
 *           is t == dead.  The victim's steps are inside `unless`, so it
 *           stops at once, wherever it is, for good.
 * Lock-free ops stay in class 1: a write of v when 1 <= c and c + v < FULL,
 * a read when c < FULL and c - take >= 1.  Others take xlock, then: pre-step
 * (0 -> v: raise K to 1 if kf == 0; FULL -> c > 0: lower K to class 1),
 * CAS of count (reload and retry), post-step sync of K's class to count's,
 * unlock.  Locking: CAS 0 -> me; held by a dead t: CAS t -> me, repair
 * (kf := K, as read in fdinfo) and sync; held by a live t: futex wait until
 * xlock changes (its 10 ms timeout only matters once t is dead, so the
 * wait ends when xlock changes or t dies).  The sleeper settles first if
 * xlock is held or the classes differ, reads rwake, counts itself, looks
 * at count and sleeps while rwake is unchanged (its timeout, 1 s in the
 * C code, is modelled as one wakeup after the writer died: a writer killed
 * between its CAS and its wake wakes nobody).  A non-blocking read of an empty counter that
 * finds xlock held by a dead process takes over (repair, sync, unlock).
 *
 * Change to the draft (xmirror-spec.md), found by this model: with a
 * non-semaphore kernel fd, lowering K from FULL is a read(2) that takes all,
 * so K goes through 0.  The draft's pre-step (read, write back 1, CAS
 * count FULL -> 0, drain) leaves K == 0 with count == FULL between the read
 * and the write back, and for good if the reader dies there: an epoll
 * waiting for POLLIN on the fd then never wakes, though count is FULL.  No
 * order avoids a miss there (K can only go FULL -> 0 in one read, count
 * FULL -> 0 in one CAS); the one kept misses writability instead: a
 * non-semaphore read that empties a full counter does no pre-step, CASes
 * FULL -> 0, then drains K (post-step), so K == FULL with count == 0 only
 * between its CAS and its drain, or until a takeover if it dies there.  A
 * semaphore read leaving FULL goes to FULL - 1 and lowers K by one read of
 * 1: K never passes through 0.  MUTANT_LOWER_FIRST is the draft's order.
 *
 * Not modelled: the signal handler path (a CAS across classes without the
 * lock, then `recheck`), demotion, blocking writes (the writes here are
 * EAGAIN when they would pass FULL), pid reuse.
 * Each statement is one atomic step of the C code (a load, a store, a CAS,
 * one system call); an atomic block with a guard on shared state is a load
 * with what it decides, or a CAS.
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_RAISE_AFTER     the 0 -> v write raises K after its CAS
 *   MUTANT_DRAIN_BEFORE    the read that empties the counter drains K
 *                          before its CAS
 *   MUTANT_NO_REPAIR       a takeover does not set kf := K
 *   MUTANT_NO_TAKEOVER     a locker waits on a dead holder as on a live one
 *   MUTANT_LOCKFREE_CROSS  the lock-free write also accepts c == 0
 *   MUTANT_WAKE_BEFORE_CAS the writer wakes the sleepers before its CAS
 *   MUTANT_NO_XSL          the sleeper does not count itself
 *   MUTANT_SEQ_AFTER       the sleeper reads the futex word after its look
 *                          at the counter
 *   MUTANT_LOWER_FIRST     the draft's order: a non-semaphore read leaving
 *                          FULL lowers K (read, write back 1) before its CAS
 */
#define FULL 3
#define CLS(x)	((x) == 0 -> 0 : ((x) >= FULL -> 2 : 1))

byte count;
byte K;
byte kf;
byte xlock;
byte dead;
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
#define INV	((count == 0 || K > 0) && \
		 (K < FULL || count == FULL || \
		  (xlock != 0 && !sem && count == 0)))

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
inline lsync() {
	do
	:: c = count;
		if
		:: CLS(c) == CLS(kf) -> break
		:: c == 0 && kf > 0 ->			/* drain */
			kread();
			kf = (kv == 0 || kv >= kf -> 0 : kf - kv)
		:: c == FULL && kf < FULL ->		/* raise */
			kwrite(FULL - kf);
			kf = FULL
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

inline lock() {
	do
	:: atomic { xlock == 0 -> xlock = me } -> break
	:: atomic { xlock != 0 -> t = xlock } ->
		if
#ifndef MUTANT_NO_TAKEOVER
		:: t == dead ->				/* kill(t, 0): ESRCH */
			if
			:: atomic { xlock == t -> xlock = me } -> repair(); break
			:: atomic { xlock != t -> t = 0 }
			fi
#endif
		:: else ->				/* FUTEX_WAIT */
#ifdef MUTANT_NO_TAKEOVER
			atomic { xlock != t -> t = 0 }
#else
			atomic { xlock != t || t == dead -> t = 0 }
#endif
		fi
	od
}

inline unlock() {
	xlock = 0
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
			lock();
			do
			:: c = count;
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
			break
		fi
	od;
	if
	:: r -> pdone = pdone + v
	:: else -> skip
	fi
}

/* A read: r = 1 if it took, 0 for EAGAIN.  nb: non-blocking (its empty
 * case looks at the holder's liveness). */
inline rd(nb) {
	r = 0;
	do
	:: c = count;
		if
		:: c == 0 ->
			if
#ifndef MUTANT_NO_TAKEOVER
			:: nb ->
				t = xlock;
				if
				:: t != 0 && t == dead ->	/* ESRCH */
					if
					:: atomic { xlock == t -> xlock = me } ->
						repair();
						unlock()
					:: atomic { xlock != t -> skip }
					fi
				:: else -> skip
				fi
#endif
			:: else -> skip
			fi;
			break					/* EAGAIN */
		:: c > 0 && c < FULL && c - (sem -> 1 : c) >= 1 ->
			if
			:: atomic { count == c -> tk = (sem -> 1 : c); count = c - tk; consumed = consumed + tk; r = 1 } -> break
			:: atomic { count != c -> skip }
			fi
		:: else ->
			lock();
			do
			:: c = count;
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
	od
}

proctype writer()
{
	byte me = 1;
	byte c, v, t, kv;
	bit r, from0;

	{
		if
		:: wr(0)
		:: wr(1)
		fi;
		if
		:: wr(0)
		:: wr(1)
		fi;
		fin[me] = 1
	} unless { dead == me }
}

proctype reader()
{
	byte me = 2;
	byte c, t, tk, kv, seq;
	bit r;

	{
		rd(1);
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
			:: xlock != 0 || CLS(count) != CLS(kf) ->
				lock(); lsync(); unlock()
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
				 * matters only once the waker died (once). */
end_sleep:			atomic { rwake != seq || (dead == 1 && !tmo) ->
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

/* One process, or none, is killed at any step. */
proctype killer()
{
	if
	:: dead = 1
	:: dead = 2
	:: skip
	fi
}

/* Blocked unless the invariant fails. */
proctype invariant()
{
end:	atomic { !(INV) -> assert(false) }
}

/* Runs only when nothing else can move.  A lock still held is a dead
 * process's: the next operation would take it over; do that first. */
proctype final()
{
	byte me = 3;
	byte c, kv;

	timeout ->
	assert(fin[1] || dead == 1);
	assert(fin[2] || dead == 2 || sleeping);
	if
	:: xlock != 0 ->
		assert(xlock == dead);
		xlock = me;
		repair();
		unlock()
	:: else -> skip
	fi;
	assert(CLS(K) == CLS(count));
	assert(kf == K);
	assert(!(sleeping && dead != 2 && count > 0));
	assert(pdone <= consumed + count && consumed + count <= pstart)
}

init
{
	atomic {
		if
		:: sem = 0
		:: sem = 1
		fi;
		run writer();
		run reader();
		run killer();
		run invariant();
		run final()
	}
}
