/*
 * readyq.pml - the item state machine of the wait-free ready queue
 * (src/readyq.c), for spin.  One item, its source, producers that signal,
 * consumers that harvest under the consumer lock, and a ctl thread that
 * removes the item (rq_retire) while all of that runs.  Checked:
 *  - an item is on the queue at most once (never queued twice);
 *  - no lost event: when everything has stopped, a source with pending
 *    value has its item queued (or the item was removed);
 *  - no use after free: nobody touches the item after it is freed;
 *  - every value written is read exactly once (unless removed).
 * Each labelled line is one atomic step of the C code.  The queue itself
 * (liburcu's wfcqueue) is modelled as a count of links of this item; its
 * own correctness is liburcu's.  Mutants that check.sh requires to fail:
 * MUTANT_IDLE_AFTER_POLL (the dequeuer marks the item idle after polling
 * the source) and MUTANT_FREE_QUEUED (removal frees a queued item).
 */
#define NPROD 2
#define PER   2
#define NCONS 2

#define IDLE   0
#define QUEUED 1
#define DEAD   2

byte state = IDLE;
byte inq;		/* times the item is linked in the queue */
byte count;		/* the source's counter (values pending) */
byte written, readv;
bool freed, removed;
bool lt;		/* level-triggered (else edge-triggered) */
bit lock;		/* the consumer lock */
bit wqlock;		/* the source's wait-queue lock */

inline claim_and_enqueue() {
	atomic {
		if
		:: state == IDLE -> state = QUEUED; assert(!freed); inq++;
			assert(inq <= 1)
		:: else -> skip
		fi
	}
}

proctype producer()
{
	byte i = 0;
	do
	:: i < PER ->
		atomic { count++; written++ }	/* CAS on the counter */
		/* wq_wake: walk the items under the wq lock */
		atomic { wqlock == 0 -> wqlock = 1 };
		if
		:: !removed -> claim_and_enqueue()	/* rq_enqueue */
		:: else -> skip			/* unlinked already */
		fi;
		wqlock = 0;
		i++
	:: else -> break
	od
}

proctype consumer()
{
	do
	:: atomic { lock == 0 -> lock = 1 };
		if
		:: inq > 0 ->
			inq--;			/* dequeue (under the lock) */
			assert(!freed);
			if
			:: state == DEAD -> freed = true
			:: else ->
#ifndef MUTANT_IDLE_AFTER_POLL
				state = IDLE;	/* before the poll */
#endif
				if
				:: count > 0 ->
					/* deliver; the user reads it */
					atomic { readv = readv + count; count = 0 };
					if
					:: lt -> claim_and_enqueue()
					:: else -> skip
					fi
				:: else -> skip	/* not ready: dropped */
				fi;
#ifdef MUTANT_IDLE_AFTER_POLL
				/* wrong: a signal between poll and here is lost */
				atomic { if :: state == QUEUED -> skip :: else -> state = IDLE fi }
#endif
				skip
			fi
		:: else -> skip
		fi;
		lock = 0
	:: true -> break
	od
}

proctype remover()
{
	/* port_ctl DEL: unlink from the source's wq (no more signals reach
	 * the item), then rq_retire under the consumer lock. */
	atomic { wqlock == 0 -> wqlock = 1 };
	removed = true;			/* wq_unlink */
	wqlock = 0;
	atomic { lock == 0 -> lock = 1 };
	if
#ifndef MUTANT_FREE_QUEUED
	:: state == QUEUED -> state = DEAD
#endif
	:: else -> assert(!freed); freed = true
	fi;
	lock = 0
}

proctype monitor()
{
	timeout ->
	assert(inq <= 1);
	if
	:: !removed -> assert(count == 0 || inq == 1); assert(!freed)
	:: else -> skip
	fi
}

init
{
	atomic {
		if
		:: lt = true
		:: lt = false
		fi;
		byte i;
		for (i : 1 .. NPROD) { run producer() }
		for (i : 1 .. NCONS) { run consumer() }
		if
		:: run remover()
		:: skip
		fi;
		run monitor()
	}
}
