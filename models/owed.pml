/*
 * owed.pml - work a signal handler owes to its thread (src/lock.c, the
 * SIGNALS part of src/eventfd.c), for spin.
 *
 * Two threads; each takes the library's lock now and then and has a signal
 * handler that writes a ueventfd (one of two objects) at any point of the
 * thread's run, its thread suspended meanwhile ("provided" below).  A
 * handler whose thread holds a lock (depth > 0) must not take it: it adds
 * to the counter and owes the walk (lock_owe: fetch_or of the object's
 * bits; the first queues the object on its thread's list with a
 * reference); else it walks itself.  A thread whose depth goes back to 0
 * drains its list (lock__drain: take the list, read next, exchange the
 * bits to 0, walk, drop the reference), unless it is draining already.  A
 * walk takes the lock and records the counter it saw (seen).  Checked:
 *  - no lost write: at the end every object's walks have seen its count;
 *  - a reference is dropped only after being taken (refs never below 0)
 *    and all are dropped at the end;
 *  - no deadlock (a handler never waits for its own thread's lock).
 * Each statement is one atomic step of the C code; an atomic block is one
 * RMW.  Mutants that models/check.sh requires to fail:
 *   MUTANT_CLEAR_AFTER_WALK  the drain clears the bits after the walk;
 *   MUTANT_NEXT_AFTER_BITS   the drain reads next after the bits' exchange
 *                            (another thread may have queued the node again);
 *   MUTANT_NO_DEPTH          a handler inside a lock walks anyway.
 */
#define NOBJ 2
#define NIL 255
#define NT 2

byte count[NOBJ];
byte seen[NOBJ];
byte bits[NOBJ];
byte nxt[NOBJ];
byte refs[NOBJ];
byte head[NT];
byte depth[NT];
bool draining[NT];
bool inh[NT];
bit lock;
byte done;

inline take() {
	depth[me]++;
	atomic { lock == 0 -> lock = 1 }
}

inline walk(o) {
	take();
	seen[o] = count[o];
	lock = 0;
	depth[me]--
	/* depth is > 0 here only in a drain (draining: no nested drain). */
}

inline drain() {
	if
	:: draining[me] -> skip
	:: else ->
		draining[me] = true;
		do
		:: atomic { head[me] == NIL -> break }
		:: atomic { head[me] != NIL -> o = head[me]; head[me] = NIL }
			do
			:: o == NIL -> break
			:: else ->
#ifndef MUTANT_NEXT_AFTER_BITS
				n = nxt[o];
#endif
#ifdef MUTANT_CLEAR_AFTER_WALK
				b = bits[o];
				if
				:: b -> walk(o)
				:: else -> skip
				fi;
				bits[o] = 0;
#else
				atomic { b = bits[o]; bits[o] = 0 };
#ifdef MUTANT_NEXT_AFTER_BITS
				n = nxt[o];
#endif
				if
				:: b -> walk(o)
				:: else -> skip
				fi;
#endif
				atomic { assert(refs[o] > 0); refs[o]-- };
				o = n
			od
		od;
		draining[me] = false
	fi
}

inline drop() {
	lock = 0;
	depth[me]--;
	if
	:: depth[me] == 0 -> drain()
	:: else -> skip
	fi
}

/* The thread's own run: two lock sections (ctl, a harvest...). */
proctype thread(byte me) provided (!inh[me])
{
	byte o, n, b;

	take();
	drop();
	take();
	drop();
	atomic { done++ }
}

/* Its handler: writes obj, whatever the thread is doing. */
proctype handler(byte me; byte obj)
{
	byte o, n, b, old;

	atomic { !inh[me] -> inh[me] = true };
	atomic { count[obj]++ };
#ifdef MUTANT_NO_DEPTH
	if
	:: true ->
#else
	if
	:: depth[me] > 0 ->
		/* lock_owe */
		atomic { old = bits[obj]; bits[obj] = 1 };
		if
		:: old == 0 ->
			atomic { refs[obj]++ };
			atomic { nxt[obj] = head[me]; head[me] = obj }
		:: else -> skip
		fi
	:: else ->
#endif
		walk(obj);
		/* the handler's own lock_drop at depth 0 drains */
		if
		:: depth[me] == 0 -> drain()
		:: else -> skip
		fi
	fi;
	inh[me] = false;
	atomic { done++ }
}

init {
	byte i;

	for (i : 0 .. NT - 1) {
		head[i] = NIL
	}
	for (i : 0 .. NOBJ - 1) {
		nxt[i] = NIL
	}
	atomic {
		run thread(0);
		run thread(1);
		run handler(0, 0);
		run handler(0, 1);
		run handler(1, 0)
	}
	done == 5;
	/* Everything has stopped: every write was walked after it. */
	for (i : 0 .. NOBJ - 1) {
		assert(seen[i] == count[i]);
		assert(refs[i] == 0);
		assert(bits[i] == 0)
	}
}
