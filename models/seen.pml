/*
 * seen.pml - SEEN's IN FLIGHT (preload/wrap_mem.c): a range the preload
 * read once is read again directly only while no call that can unmap it
 * has come since.  A call that may unmap runs between mem_begin (raise
 * `changing`, then move `gen`) and mem__end (move `gen`, then lower
 * `changing`), and a signal handler may leave it by siglongjmp after the
 * unmap, skipping mem__end.  A peek loads `gen` (mem__entry), hits if its
 * entry carries that generation, else reads with process_vm_readv (EFAULT
 * if the page is gone) and remembers the range only if, after the read,
 * `changing` is 0 and `gen` is still the one it loaded (mem__seen_add).
 *
 * Checked exhaustively: a peek made after the call returned, or was left,
 * never hits a page the call unmapped (a direct read there would fault
 * where the kernel answers EFAULT).  Peeks racing the call itself race
 * the program's own call, and may do either.
 *
 * models/check.sh runs it and each mutant, which must fail:
 *   MUTANT_SEEN_END_ONLY     mem_begin does not move `gen`: an entry made
 *                            before the call survives a call left by
 *                            siglongjmp
 *   MUTANT_SEEN_NO_INFLIGHT  a peek remembers whatever `changing` says: a
 *                            range read after mem_begin, before the unmap,
 *                            survives a call left by siglongjmp
 *   MUTANT_SEEN_NO_END_BUMP  mem__end does not move `gen`: a range read
 *                            after mem_begin, before the unmap, and
 *                            remembered after mem__end, survives the call
 */
bit mapped = 1;		/* the page the program polls */
byte gen;		/* mem__gen */
byte changing;		/* mem__changing */
bit has_entry;		/* the peeking thread's way */
byte entry_gen;
bit done;		/* the call returned, or was left by siglongjmp */

/* One preload_peek of the page: hit, or read and perhaps remember. */
inline peek(hit) {
	g0 = gen;				/* mem__entry (acquire) */
	if
	:: has_entry && entry_gen == g0 -> hit = 1	/* direct read */
	:: else ->
		hit = 0;
		if
		:: mapped ->			/* process_vm_readv: read */
#ifdef MUTANT_SEEN_NO_INFLIGHT
			if
			:: gen == g0 -> has_entry = 1; entry_gen = g0
			:: else -> skip
			fi
#else
			if
			:: changing == 0 ->
				if
				:: gen == g0 -> has_entry = 1; entry_gen = g0
				:: else -> skip
				fi
			:: else -> skip
			fi
#endif
		:: else -> skip			/* EFAULT: nothing kept */
		fi
	fi
}

proctype peeker()
{
	byte g0;
	bit hit;

	/* Peeks racing the call. */
	do
	:: peek(hit)
	:: break
	od;
	/* The program's next poll, after the call. */
	done == 1;
	peek(hit);
	assert(!hit || mapped)
}

proctype unmapper()
{
	/* mem_begin */
	changing++;
#ifndef MUTANT_SEEN_END_ONLY
	gen++;
#endif
	mapped = 0;				/* the call: munmap */
	if
	:: true ->				/* mem__end */
#ifndef MUTANT_SEEN_NO_END_BUMP
		gen++;
#endif
		changing--
	:: true -> skip				/* siglongjmp: skipped */
	fi;
	done = 1
}

init
{
	atomic {
		run peeker();
		run unmapper()
	}
}
