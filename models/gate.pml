/*
 * gate.pml - the fork fence and the fork gate (src/lock.c, FENCE and
 * GATE; src/obj.c, FORK), for spin.
 *
 * Two threads each run two critical sections (an outermost lock_take ...
 * lock_drop).  A third runs two spans (lock_span_enter ... leave) with a
 * critical section inside each: a creation, which publishes an object
 * inside its section, and a demotion, which marks its object DEMOTING
 * before its section and DEMOTED after it (as uefd_demote and port_demote
 * do around their locks).  Two more threads fork once each, at once.
 *
 * A thread's outermost lock_take stores inside = 1 then loads the gate; if
 * it is closed it stores inside = 0, waits for it to open and tries again.
 * lock_drop stores inside = 0.  A span adds to `spans` then loads the
 * fence; if it is closed it takes its add back, waits for the fence to open
 * and tries again; its end takes the add back.  A fork's prepare handler:
 * takes the fork mutex; closes the fence; waits until no span is in flight;
 * walks the objects, sharing each published one that is not shared yet (a
 * share is two steps, begun then done: uefd_share's kwatch, then its
 * `shared`; the walk skips one begun); closes the gate; waits until no
 * other thread's inside is 1 (membarrier(2) makes the two sides' store then
 * load sequentially consistent, which is spin's own model); forks; opens
 * the gate and the fence and drops the mutex.  Checked:
 *  - at every fork, no thread is in a critical section (the child finds
 *    every lock free and nothing half-changed), the published object is
 *    shared, and no object is DEMOTING (the child would wait for ever for
 *    a thread it does not have);
 *  - no deadlock: everyone finishes.
 * Mutants that models/check.sh requires to fail:
 *   MUTANT_LOAD_FIRST        lock_take loads the gate before publishing inside;
 *   MUTANT_NO_WAIT           prepare does not wait for the threads inside;
 *   MUTANT_NO_FENCE          prepare does not wait for the spans (issue 32:
 *                            a ueventfd published after the walk, a
 *                            demotion cut in two);
 *   MUTANT_SPAN_LOAD_FIRST   a span loads the fence before it adds itself;
 *   MUTANT_LATE_FORK_MUTEX   the fork mutex is taken only at the gate, after
 *                            the walk (issue 32: the second of two forks
 *                            skipped a share the first had begun).
 */
#define NT 2
#define ROUNDS 2
#define NF 2

bit gate;
bit inside[NT + 1];	/* the span thread's slot is the last */
bit incs[NT + 1];	/* in the critical section proper (holding the lock) */
bit lock;
bit fence;
byte spans;
bit fmutex;
/* the objects: one the span thread creates, one it demotes */
bit published, sharing, shared;
bit demoting;
byte done;

inline lock_take(me)
{
	do
#ifdef MUTANT_LOAD_FIRST
	:: if
	   :: gate -> (gate == 0)
	   :: else -> inside[me] = 1; break
	   fi
#else
	:: inside[me] = 1;
	   if
	   :: gate ->
		inside[me] = 0;		/* step out */
		(gate == 0)		/* futex wait */
	   :: else -> break
	   fi
#endif
	od;
	atomic { lock == 0 -> lock = 1 };
	incs[me] = 1
}

inline lock_drop(me)
{
	incs[me] = 0;
	lock = 0;
	inside[me] = 0
}

inline span_enter()
{
	do
#ifdef MUTANT_SPAN_LOAD_FIRST
	:: if
	   :: fence -> (fence == 0)
	   :: else -> spans++; break
	   fi
#else
	:: spans++;
	   if
	   :: fence ->
		spans--;		/* out, until the fork is over */
		(fence == 0)		/* futex wait */
	   :: else -> break
	   fi
#endif
	od
}

inline span_leave()
{
	spans--
}

proctype thread(byte me)
{
	byte round = 0;

	do
	:: round < ROUNDS ->
		round++;
		lock_take(me);
		/* ... the section ... */
		lock_drop(me)
	:: else -> break
	od;
	atomic { done++ }
}

/* A creation (published inside its section, as uobj_publish does under
 * obj__lock), then a demotion (DEMOTING before its first lock, DEMOTED
 * after its last). */
proctype spanner()
{
	span_enter();
	lock_take(NT);
	published = 1;
	lock_drop(NT);
	span_leave();

	span_enter();
	demoting = 1;
	lock_take(NT);
	lock_drop(NT);
	demoting = 0;
	span_leave();

	atomic { done++ }
}

proctype forker()
{
	bit mine = 0;	/* this fork began the share */

#ifndef MUTANT_LATE_FORK_MUTEX
	atomic { fmutex == 0 -> fmutex = 1 };
#endif
	fence = 1;
#ifndef MUTANT_NO_FENCE
	(spans == 0);
#endif
	/* obj__demote_all: share what is published and not shared.  A share
	 * begun by another fork is skipped, as the walk did before issue 32
	 * (uefd_sharing): with the fork mutex first, a share is never begun
	 * and unfinished at a walk (MUTANT_LATE_FORK_MUTEX shows why). */
	if
	:: atomic { published && !sharing -> sharing = 1; mine = 1 }
	:: else
	fi;
	if
	:: mine -> shared = 1
	:: else
	fi;
#ifdef MUTANT_LATE_FORK_MUTEX
	atomic { fmutex == 0 -> fmutex = 1 };
#endif
	gate = 1;
	/* membarrier, then wait for every other slot */
#ifndef MUTANT_NO_WAIT
	(inside[0] == 0 && inside[1] == 0 && inside[2] == 0);
#endif
	/* fork(): the child's copy of memory */
	assert(!incs[0] && !incs[1] && !incs[2] && lock == 0);
	assert(!published || shared);
	assert(!demoting);
	gate = 0;
	fence = 0;
	fmutex = 0;
	atomic { done++ }
}

init
{
	atomic {
		run thread(0);
		run thread(1);
		run spanner();
		run forker();
		run forker()
	}
	done == NT + 1 + NF
}
