/* SPDX-License-Identifier: MIT */
/*
 * examples/keyd under attack.  With the keys in a malloc()ed block the
 * attack client recovers the signing key through the Heartbleed over-read;
 * with the keys in an mpkit vault the over-read faults, the fault report
 * names domain "keyd-key", only that connection ends, no key byte leaves
 * the daemon, and it serves 10,000 requests from 8 threads with attacks
 * mixed in, every good reply verified.  The daemon's second bug, the 'D'
 * "debug peek" whose system call the client picks, gets the key out of
 * the vault all the same (hw: process_vm_readv, /proc/self/mem,
 * pkey_mprotect; soft: /proc/self/mem, mprotect), except that where the
 * vault is memfd_secret memory (mpk_info().secretmem_vaults) the kernel
 * cannot read it: process_vm_readv and /proc/self/mem fail without
 * lockdown too (EFAULT, EIO), and pkey_mprotect/mprotect, which let the
 * daemon's own thread read it, remain; under keyd --lockdown
 * every one of them is refused (EPERM, or EACCES for /proc/self/mem), no
 * key byte leaves, and the same load with over-reads and 'D' requests
 * mixed in is served in full.
 */
#include "t_ex.h"
#include "t_kernel.h"
#include "../examples/keyd/proto.h"

struct daemon {
	pid_t pid;
	char *out, *err, port[16], addr[32];
};

static const char *key_file;
static struct keyd_keys keys;

/* mode: NULL (the vault), "--plain" or "--lockdown". */
static void start(struct daemon *d, const char *mode)
{
	char *argv[] = { (char *)t_ex_path("keyd"), "--key-file", (char *)key_file,
			 (char *)mode, NULL };

	d->out = t_ex_tmp("keyd-out");
	d->err = t_ex_tmp("keyd-err");
	d->pid = t_ex_spawn(argv, d->out, d->err);
	for (int i = 0; i < 3000; i++) { /* 30 s: the VM is slow */
		char *text = t_ex_slurp(d->out, NULL), *p = strstr(text, "127.0.0.1:");
		if (p && strchr(p, '\n')) {
			snprintf(d->port, sizeof(d->port), "%d", atoi(p + 10));
			char *a = strstr(text, " at 0x");
			snprintf(d->addr, sizeof(d->addr), "%.*s", a ? (int)strcspn(a + 4, ";, \n") : 0,
				 a ? a + 4 : "");
			free(text);
			return;
		}
		free(text);
		REQUIRE(waitpid(d->pid, NULL, WNOHANG) == 0);
		usleep(10000);
	}
	REQUIRE(!"keyd did not start");
}

/* SIGTERM; returns its stdout, shows both outputs; *err gets stderr. */
static char *stop(struct daemon *d, char **err)
{
	REQUIRE(kill(d->pid, 0) == 0); /* it is still serving */
	kill(d->pid, SIGTERM);
	CHECK(t_ex_wait(d->pid) == 0);
	char *out = t_ex_slurp(d->out, NULL);
	*err = t_ex_slurp(d->err, NULL);
	t_ex_show("keyd", out);
	t_ex_show_some("keyd stderr", *err, 6);
	unlink(d->out), unlink(d->err);
	free(d->out), free(d->err);
	return out;
}

/* Key bytes found in the file: those covered by an 8-byte run of either
 * key (the signing key's 64 bytes, the box key's 32) in the dump. */
static int leaked(const char *dump)
{
	size_t n;
	char *p = t_ex_slurp(dump, &n);
	const unsigned char *key[2] = { keys.sign_sk, keys.box_key };
	size_t len[2] = { 64, 32 };
	int count = 0;

	for (int k = 0; k < 2; k++) {
		bool hit[64] = { false };
		for (size_t i = 0; i + 8 <= len[k]; i++)
			if (memmem(p, n, key[k] + i, 8))
				memset(hit + i, 1, 8);
		for (size_t i = 0; i < len[k]; i++)
			count += hit[i];
	}
	free(p);
	return count;
}

/* The key came out into dump: count it, stop the daemon, clean up. */
static void leaked_and_stop(struct daemon *d, char *out, char *dump, const char *what)
{
	char *err;
	int n = leaked(dump);
	printf("%s: key bytes leaked %d of 96\n", what, n);
	CHECK(n >= 64);
	free(out);
	free(stop(d, &err));
	free(err);
	unlink(dump);
	free(dump);
}

/* The load client's two summary lines. */
struct load_out {
	int good, correct, wrong, lost, attacks, cut, refused, answered;
};

static void run_load(char **argv, struct load_out *l)
{
	char *out;
	*l = (struct load_out){ 0, 0, -1, -1, 0, -1, -1, -1 };
	CHECK(t_ex_run(argv, &out, NULL) == 0);
	char *p = strstr(out, "threads: ");
	CHECK(p && sscanf(p, "threads: %d good (%*d signatures, %*d encryptions): %d correct,"
			     " %d wrong, %d lost", &l->good, &l->correct, &l->wrong, &l->lost) == 4);
	p = strstr(out, "load: ");
	p = p ? strstr(p + 1, "load: ") : NULL;
	CHECK(p && sscanf(p, "load: %d attack requests: %d cut, %d refused, %d answered",
			  &l->attacks, &l->cut, &l->refused, &l->answered) == 4);
	CHECK(l->good + l->attacks == 10000 && l->attacks == 200);
	CHECK(l->correct == l->good && l->wrong == 0 && l->lost == 0 && l->answered == 0);
	free(out);
}

static int attack(struct daemon *d, const char *dump, char **out)
{
	char *argv[] = { (char *)t_ex_path("attack"), "--dump", (char *)dump, d->port, NULL };
	return t_ex_run(argv, out, NULL);
}

static void plain_build(void)
{
	struct daemon d;
	char *out, *dump = t_ex_tmp("dump");

	printf("== keys in a malloc()ed block (keyd --plain)\n");
	start(&d, "--plain");
	CHECK(attack(&d, dump, &out) == 0); /* 0: recovered */
	CHECK(strstr(out, "SIGNING KEY") && strstr(out, "forged signature verifies"));
	leaked_and_stop(&d, out, dump, "plain");
}

static void vault_build(void)
{
	struct daemon d;
	char *out, *err, *dump = t_ex_tmp("dump");
	char *load[] = { (char *)t_ex_path("attack"), "--load", "10000", "--threads", "8",
			 "--key-file", (char *)key_file, "--attack-every", "50", NULL, NULL };
	int search = 0, cut = 0, attacks = 0;

	printf("== keys in an mpkit vault (keyd)\n");
	start(&d, NULL);
	CHECK(attack(&d, dump, &out) == 1); /* 1: not recovered */
	for (char *p = out; (p = strstr(p, "attack: N=")); p++)
		search++;
	for (char *p = out; (p = strstr(p, "connection cut")); p++)
		cut++;
	CHECK(cut >= 1);
	CHECK(strstr(out, "key not recovered") != NULL);
	int n = leaked(dump);
	printf("vault: key bytes leaked %d\n", n);
	CHECK(n == 0);
	free(out);

	/* The same daemon serves on: load with attacks mixed in. */
	load[9] = d.port;
	struct load_out l;
	run_load(load, &l);
	CHECK(l.cut == l.attacks);
	attacks = l.attacks;
	int good = l.good, correct = l.correct;

	char *dout = stop(&d, &err);
	unsigned long faults = 0;
	char *p = strstr(dout, "connections, ");
	CHECK(p && sscanf(p, "connections, %lu ended", &faults) == 1);
	CHECK(faults == (unsigned long)(cut + attacks)); /* one per cut connection */
	CHECK(strstr(err, "read of domain \"keyd-key\"") != NULL);
	CHECK(strstr(err, t_backend() == MPK_BACKEND_HW ? "SEGV_PKUERR" : "SEGV_ACCERR"));
	printf("vault: %d load requests (%d of them over-reads) and %d attack-client"
	       " requests (%d cut); %lu connections ended by faults; %d good replies, all"
	       " correct; key bytes leaked %d\n", good + attacks, attacks, search, cut, faults,
	       correct, n);
	free(dout);
	free(err);
	unlink(dump);
	free(dump);
}

/* The 'D' attacks: each way's line of the client's output. */
static const char *way_line(const char *out, char how)
{
	char tag[32];
	snprintf(tag, sizeof(tag), "syscall %c ", how);
	const char *p = strstr(out, tag);
	return p ? p : "";
}

static bool way_is(const char *out, char how, const char *what)
{
	const char *l = way_line(out, how), *e = strchr(l, '\n');
	const char *w = strstr(l, what);
	return w && (!e || w < e);
}

static void syscalls_vault(void)
{
	struct daemon d;
	char *out, *dump = t_ex_tmp("dump");
	bool hw = t_backend() == MPK_BACKEND_HW;

	printf("== keys in an mpkit vault, the 'D' system-call attacks (keyd)\n");
	start(&d, NULL);
	REQUIRE(d.addr[0]);
	char *argv[] = { (char *)t_ex_path("attack"), "--syscalls", d.addr, "--dump", dump,
			 d.port, NULL };
	CHECK(t_ex_run(argv, &out, NULL) == 0); /* 0: recovered */
	t_ex_show("attack", out);
	const char *no_pvm = t_process_vm_absent();
	struct mpk_info in;
	bool kx = !mpk_info(&in) && in.secretmem_vaults; /* the daemon's kernel too */
	char *said = t_ex_slurp(d.out, NULL);
	CHECK(strstr(said, kx ? "kept from the kernel (memfd_secret): yes"
			      : "kept from the kernel (memfd_secret): no") != NULL);
	free(said);
	if (no_pvm) {
		printf("t_ex_keyd: 'v' cannot leak here: %s\n", no_pvm);
		CHECK(way_is(out, 'v', "Function not implemented"));
	} else {
		CHECK(way_is(out, 'v', hw && !kx ? "SIGNING KEY" : "Bad address"));
	}
	if (kx)
		CHECK(way_is(out, 'm', "Input/output error") || way_is(out, 'm', "Bad address"));
	if (hw) {
		CHECK(kx || way_is(out, 'm', "SIGNING KEY"));
		CHECK(way_is(out, 'k', "SIGNING KEY"));
		CHECK(way_is(out, 'p', "connection cut")); /* the key still applies */
	} else {
		CHECK(kx || way_is(out, 'm', "SIGNING KEY"));
		CHECK(way_is(out, 'k', "Invalid argument")); /* no keys */
		CHECK(way_is(out, 'p', "SIGNING KEY"));
	}
	leaked_and_stop(&d, out, dump, "vault, no lockdown, system calls");
}

static void locked_build(void)
{
	struct daemon d;
	char *out, *err, *dump = t_ex_tmp("dump"), *dump2 = t_ex_tmp("dump2");

	printf("== keys in an mpkit vault, keyd --lockdown\n");
	start(&d, "--lockdown");
	REQUIRE(d.addr[0]);
	CHECK(attack(&d, dump, &out) == 1); /* the over-read: not recovered */
	CHECK(strstr(out, "connection cut") != NULL);
	free(out);
	char *argv[] = { (char *)t_ex_path("attack"), "--syscalls", d.addr, "--dump", dump2,
			 d.port, NULL };
	CHECK(t_ex_run(argv, &out, NULL) == 1); /* 1: not recovered */
	t_ex_show("attack", out);
	CHECK(way_is(out, 'v', "refused: Operation not permitted"));
	CHECK(way_is(out, 'm', "refused: Permission denied"));
	CHECK(way_is(out, 'k', "refused: Operation not permitted"));
	CHECK(way_is(out, 'p', "refused: Operation not permitted"));
	int n = leaked(dump) + leaked(dump2);
	printf("lockdown: key bytes leaked %d\n", n);
	CHECK(n == 0);
	free(out);

	char *load[] = { (char *)t_ex_path("attack"), "--load", "10000", "--threads", "8",
			 "--key-file", (char *)key_file, "--attack-every", "50", "--addr", d.addr,
			 d.port, NULL };
	struct load_out l;
	run_load(load, &l);
	/* Each thread's attacks alternate: over-reads (cut), 'D' (refused). */
	CHECK(l.cut + l.refused == l.attacks && l.cut >= l.attacks / 2 && l.refused >= l.attacks / 3);
	char *dout = stop(&d, &err);
	CHECK(strstr(dout, "keyd: locked down") != NULL);
	CHECK(strstr(err, "read of domain \"keyd-key\"") != NULL);
	printf("lockdown: %d load requests (%d over-reads, all cut; %d system-call attacks, all"
	       " refused), %d good replies, all correct; key bytes leaked %d\n", l.good + l.attacks,
	       l.cut, l.refused, l.correct, n);
	free(dout);
	free(err);
	unlink(dump);
	unlink(dump2);
	free(dump);
	free(dump2);
}

int main(void)
{
	unsigned char seed[32];

	setvbuf(stdout, NULL, _IOLBF, 0);
	REQUIRE(sodium_init() >= 0);
	t_backend();
	randombytes_buf(seed, sizeof(seed));
	keyd_derive(seed, &keys);
	char *kf = t_ex_tmp("seed");
	FILE *f = fopen(kf, "wb");
	REQUIRE(f && fwrite(seed, 1, 32, f) == 32 && fclose(f) == 0);
	key_file = kf;

	plain_build();
	vault_build();
	syscalls_vault();
	const char *why = t_lockdown_absent(MPK_LOCK_ERRNO | MPK_LOCK_PROC_MEM);
	if (why)
		printf("t_ex_keyd: keyd --lockdown not run: %s\n", why);
	else
		locked_build();
	unlink(kf);
	free(kf);
	return t_done();
}
