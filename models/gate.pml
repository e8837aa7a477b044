/*
 * gate.pml - the fork gate (src/lock.c, GATE), for spin.
 *
 * Two threads each run two critical sections (an outermost lock_take ...
 * lock_drop); a third forks twice.  A thread's outermost lock_take stores
 * inside = 1 then loads the gate; if it is closed it stores inside = 0,
 * waits for it to open and tries again.  lock_drop stores inside = 0.  The
 * fork's prepare handler closes the gate, then waits until no other
 * thread's inside is 1 (membarrier(2) makes the two sides' store-then-load
 * sequentially consistent, which is spin's own model), forks, and opens
 * the gate.  Checked:
 *  - at every fork, no thread is in a critical section (so the child
 *    finds every lock free and nothing half-changed);
 *  - no deadlock: everyone finishes.
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_LOAD_FIRST  lock_take loads the gate before publishing inside;
 *   MUTANT_NO_WAIT     prepare does not wait for the threads inside.
 */
#define NT 2
#define ROUNDS 2

bit gate;
bit inside[NT];
bit incs[NT];	/* in the critical section proper (holding the lock) */
bit lock;
byte done;

proctype thread(byte me)
{
	byte round = 0;

	do
	:: round < ROUNDS ->
		round++;
		/* lock_take, outermost: lock__enter */
enter:
#ifdef MUTANT_LOAD_FIRST
		if
		:: gate -> (gate == 0); goto enter
		:: else
		fi;
		inside[me] = 1;
#else
		inside[me] = 1;
		if
		:: gate ->
			inside[me] = 0;		/* step out */
			(gate == 0);		/* futex wait */
			goto enter
		:: else
		fi;
#endif
		atomic { lock == 0 -> lock = 1 };
		incs[me] = 1;
		/* ... the section ... */
		incs[me] = 0;
		lock = 0;
		/* lock_drop, outermost: lock__leave */
		inside[me] = 0
	:: else -> break
	od;
	atomic { done++ }
}

proctype forker()
{
	byte n = 0, i;

	do
	:: n < 2 ->
		n++;
		gate = 1;
		/* membarrier, then wait for every other slot */
#ifndef MUTANT_NO_WAIT
		i = 0;
		do
		:: i < NT -> (inside[i] == 0); i++
		:: else -> break
		od;
#endif
		/* fork(): the child's copy of memory */
		assert(!incs[0] && !incs[1] && lock == 0);
		gate = 0
	:: else -> break
	od;
	atomic { done++ }
}

init
{
	atomic {
		run thread(0);
		run thread(1);
		run forker()
	}
	done == NT + 1
}
