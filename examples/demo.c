/* SPDX-License-Identifier: MIT */
/*
 * The loop from the 2015 debate, made real: a network daemon holds a key in
 * a protection domain, opens it only while it encrypts, and a bug that
 * reads the key anywhere else is caught and reported, naming the domain.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mpkit.h"

#define KEY_LEN 32

/* A toy cipher: the point is where the key may be read, not the crypto. */
static void encrypt(unsigned char *blk, size_t n, const unsigned char *key)
{
	for (size_t i = 0; i < n; i++)
		blk[i] ^= key[i % KEY_LEN] + (unsigned char)i;
}

static void send_to_network(const unsigned char *blk, size_t n, int no)
{
	printf("  block %d sent:", no);
	for (size_t i = 0; i < n; i++)
		printf(" %02x", blk[i]);
	printf("\n");
}

/* The bug: a logging path that reads the key while it is closed. */
__attribute__((noinline)) void buggy_debug_log(const unsigned char *key);
__attribute__((noinline)) void buggy_debug_log(const unsigned char *key)
{
	fprintf(stderr, "  debug: first key byte is %02x\n", key[0]);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0); /* keep order with the child's report */
	if (mpk_init()) {
		perror("mpk_init");
		return 1;
	}
	int backend = mpk_backend();
	printf("mpkit demo: backend %s (%s)\n", mpk_backend_name(backend),
	       backend == MPK_BACKEND_HW ? "hardware protection keys: rights are per thread"
					 : "mprotect emulation: this CPU or kernel has no protection keys");

	/* A domain open for this thread while the key is loaded. */
	mpk_domain *keys = mpk_domain_create("tls-keys", MPK_RW, 0);
	if (!keys) {
		perror("mpk_domain_create");
		return 1;
	}
	unsigned char *k = mpk_alloc(keys, KEY_LEN);
	if (!k) {
		perror("mpk_alloc");
		return 1;
	}
	for (int i = 0; i < KEY_LEN; i++)
		k[i] = (unsigned char)(0x9e * i + 0x37);
	mpk_set(keys, MPK_NONE); /* closed from now on */

	int key_no = mpk_domain_key(keys);
	printf("domain \"tls-keys\" holds a %d-byte key at %p", KEY_LEN, (void *)k);
	if (key_no >= 0)
		printf(" (hardware key %d)", key_no);
	printf("; rights now: none\n");

	unsigned char blk[8];
	for (int no = 1; no <= 3; no++) {
		memset(blk, 'a' + no, sizeof(blk));
		MPK_WITH(keys, MPK_READ) { /* open for this thread only */
			encrypt(blk, sizeof(blk), k);
		}
		send_to_network(blk, sizeof(blk), no); /* the key is closed here */
	}
	printf("rights after the loop: %s\n", mpk_get(keys) == MPK_NONE ? "none" : "OPEN (bug!)");

	/* Now the bug.  It runs in a child so the demo can show the report
	 * and go on; in a real program the handler aborts the program. */
	printf("a bug now reads the key outside MPK_WITH:\n");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		mpk_fault_handler_install(NULL, NULL);
		buggy_debug_log(k);
		_exit(0); /* not reached: the read faults */
	}
	int status;
	waitpid(pid, &status, 0);
	int caught = WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
	printf("%s\n", caught ? "caught: the stray read was stopped and reported above"
			      : "NOT caught: the stray read went through");
	mpk_domain_destroy(keys);
	return caught ? 0 : 1;
}
