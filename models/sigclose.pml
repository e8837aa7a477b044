/*
 * sigclose.pml - a signal handler's close of a number while its thread is
 * inside the library (src/obj.c, SIGNALS; src/lock.h, MASKED), with a fork
 * (src/obj.c, FORK; src/lock.c, GATE), for spin.
 *
 * One object with two numbers (each published with a table reference).
 * Thread T takes a lock L (port->mtx: a ctl), then closes number 0; its
 * signal handler H closes number 1 at any point of T's run, T suspended
 * meanwhile, but never while T is inside obj__lock's masked section (from
 * before it takes the lock to after it released it: its signals are
 * blocked).  Thread U takes L, then closes number 0 too (one of the two
 * closes finds it gone).  A close (uobj_close_number): take a call
 * reference if a number leads to the object (fdtab_get); under obj__lock
 * (masked for T's frame), unpublish the number, and note whether it was the
 * last; then, if last, the type's close, which takes L (port_drop_source);
 * then drop the table's reference and the call's.  Inside any lock of the
 * library (depth > 0: T's frame holds one, or takes or drops it, or waits
 * at the gate) the close is owed with a reference (lock_owe: the first bit
 * queues the node on T's list), and a put that leaves no reference owes
 * the release (no reference: the object stays at zero); else they are done
 * at once.  The release takes L too (the items' locks).  T drains its list
 * when its depth goes back to 0 (lock__drain: take the bits, do the close
 * then drop the queue's reference, or the release), unless it is draining
 * already.  Every outermost lock_take passes the fork gate (store inside,
 * then load the gate; closed: step out, wait, again); a nested one does
 * not.  The fork F closes the gate, waits until no thread is inside, takes
 * obj__lock (a handler takes it at depth > 0, where the gate does not see
 * it), forks, and gives everything back.  Checked:
 *  - no deadlock (every process ends: a handler never waits for a lock
 *    its own frame holds);
 *  - the object is closed once, after its last number went and before its
 *    release; released once, with no reference left; no reference is
 *    dropped that was not taken; at the end: nothing owed or queued, no
 *    lock held;
 *  - at the fork, no lock is held by another thread (the child would find
 *    it held for ever).
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_NO_MASK         T's frame takes obj__lock without blocking its
 *                          signals: its handler waits for it (deadlock);
 *   MUTANT_CLOSE_INLINE    a close inside a lock is done at once (it takes
 *                          L, which the frame holds: deadlock);
 *   MUTANT_RELEASE_INLINE  a release inside a lock is done at once (the
 *                          same);
 *   MUTANT_CLOSE_NO_HOLD   the owed close takes no reference: the puts
 *                          reach zero while it is queued, and the release
 *                          is not queued (the node is) and a reference is
 *                          dropped twice;
 *   MUTANT_FORK_NO_OBJLOCK the fork does not take obj__lock: the child
 *                          finds it held by a handler whose frame waited at
 *                          the gate.
 */
#define T 0
#define U 1
#define H 2	/* the handler's owner id for the locks (T's depth) */
#define F 3

#define OWE_CLOSE 1
#define OWE_RELEASE 2

bit num[2];		/* the numbers, published */
byte nnum = 2;
byte refs = 2;		/* the table's two */
byte closes, released;
byte bits;		/* the object's owed node */
bit queued;		/* on T's list */
bit draining;
byte L, O;		/* lock owners + 1, 0 free */
byte depth[2];
bit inside[2];
bit gate;
bit masked;		/* T's signals blocked (obj__lock) */
bit inh;		/* H runs, T suspended */
byte done;

inline enter(me)
{
	do
	:: inside[me] = 1;
	   if
	   :: gate -> inside[me] = 0; (gate == 0)
	   :: else -> break
	   fi
	od
}

/* lock_take: who is the owner (T, U or H), me the thread (depth, slot). */
inline take(lk, who, me)
{
	depth[me]++;
	if
	:: depth[me] == 1 -> enter(me)
	:: else
	fi;
	atomic { lk == 0 -> lk = who + 1 }
}

/* lock_drop without its drain (the caller drains where it ends: a drain
 * inside a drain is nothing, as lock__draining says). */
inline drop0(lk, me)
{
	lk = 0;
	depth[me]--;
	if
	:: depth[me] == 0 -> inside[me] = 0
	:: else
	fi
}

inline release(who, me)
{
	take(L, who, me);
	assert(closes == 1 && refs == 0);
	released++;
	drop0(L, me)
}

inline put(who, me)
{
	atomic { assert(refs > 0); refs--; r = refs };
	if
	:: r == 0 ->
#ifndef MUTANT_RELEASE_INLINE
		if
		:: me == T && depth[T] > 0 ->
			/* lock_owe, hold: nothing (bits are 0: no close queued) */
			atomic { old = bits; bits = bits | OWE_RELEASE };
			if
			:: old == 0 -> queued = 1
			:: else
			fi
		:: else -> release(who, me)
		fi
#else
		release(who, me)
#endif
	:: else
	fi
}

inline tclose(who, me)
{
#ifndef MUTANT_CLOSE_INLINE
	if
	:: me == T && depth[T] > 0 ->
		atomic { old = bits; bits = bits | OWE_CLOSE };
		if
		:: old == 0 ->
#ifndef MUTANT_CLOSE_NO_HOLD
			refs++;
#endif
			queued = 1
		:: else
		fi
	:: else ->
#endif
		take(L, who, me);
		assert(released == 0 && nnum == 0);
		closes++;
		drop0(L, me)
#ifndef MUTANT_CLOSE_INLINE
	fi
#endif
}

/* lock__drain: T's frame or H, at depth 0. */
inline drain(who, me)
{
	if
	:: me == T && !draining ->
		draining = 1;
		do
		:: queued ->
			queued = 0;
			atomic { b = bits; bits = 0 };
			if
			:: b & OWE_CLOSE ->
				take(L, who, me);
				assert(released == 0 && nnum == 0);
				closes++;
				drop0(L, me);
				put(who, me)
			:: else ->
				if
				:: b & OWE_RELEASE -> release(who, me)
				:: else
				fi
			fi
		:: else -> break
		od;
		draining = 0
	:: else
	fi
}

inline drop(lk, who, me)
{
	lk = 0;
	depth[me]--;
	if
	:: depth[me] == 0 -> inside[me] = 0; drain(who, me)
	:: else
	fi
}

/* uobj_close_number of number n. */
inline close_number(n, who, me)
{
	got = 0;
	atomic {
		if
		:: num[n] && refs > 0 -> refs++; got = 1
		:: else
		fi
	};
	if
	:: got ->
		unpub = 0;
		/* obj__lock, masked for T's frame */
#ifndef MUTANT_NO_MASK
		if
		:: who == T -> masked = 1
		:: else
		fi;
#endif
		take(O, who, me);
		if
		:: num[n] -> num[n] = 0; nnum--; unpub = 1; last = (nnum == 0)
		:: else
		fi;
		O = 0;
		masked = (who == T -> 0 : masked);
		depth[me]--;
		if
		:: depth[me] == 0 -> inside[me] = 0; drain(who, me)
		:: else
		fi;
		if
		:: unpub ->
			if
			:: last -> tclose(who, me)
			:: else
			fi;
			put(who, me)	/* the table's */
		:: else
		fi;
		put(who, me);		/* the call's */
		/* what the inline close and release owed meanwhile (their
		 * lock_drop's drain) */
		if
		:: depth[me] == 0 -> drain(who, me)
		:: else
		fi
	:: else
	fi
}

proctype frame() provided (!inh)
{
	byte r, old, b;
	bit got, unpub, last;

	take(L, T, T);		/* a ctl */
	drop(L, T, T);
	close_number(0, T, T);
	atomic { done++ }
}

proctype handler()
{
	byte r, old, b;
	bit got, unpub, last;

	atomic { !inh && !masked -> inh = 1 };
	close_number(1, H, T);
	inh = 0;
	atomic { done++ }
}

proctype other()
{
	byte r, old, b;
	bit got, unpub, last;

	take(L, U, U);
	drop(L, U, U);
	close_number(0, U, U);
	atomic { done++ }
}

proctype fork()
{
	gate = 1;
	(inside[T] == 0 && inside[U] == 0);
#ifndef MUTANT_FORK_NO_OBJLOCK
	atomic { O == 0 -> O = F + 1 };
#endif
	/* fork(): the child's copy of memory */
	assert(L == 0 && (O == 0 || O == F + 1));
#ifndef MUTANT_FORK_NO_OBJLOCK
	O = 0;
#endif
	gate = 0;
	atomic { done++ }
}

init
{
	num[0] = 1;
	num[1] = 1;
	atomic {
		run frame();
		run handler();
		run other();
		run fork()
	}
	done == 4;
	assert(closes == 1 && released == 1 && refs == 0);
	assert(bits == 0 && !queued && L == 0 && O == 0);
	assert(nnum == 0 && !num[0] && !num[1])
}
