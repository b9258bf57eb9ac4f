// A stand-in for libcuda.so.1 used by the gpu package's tests on machines
// without a GPU. It exports the driver entry points the package resolves
// (with the same versioned names and signatures) plus the ones an engine
// (package internal/engine) uses to allocate memory and export it.
//
// "Device memory" is a shared-memory file mapped MAP_SHARED. An IPC handle
// carries the file's path ("FAKE" + path), so another process that opens
// the handle maps the same bytes, as with real CUDA IPC; a VMM allocation
// (cuMemCreate) is such a file too, and its shareable handle is a file
// descriptor of it. Files this driver creates are named
// fc-<owner pid>-<seq>-d<physical device>, which tells an importer the
// device the memory lives on and whether its owner still runs; a file of
// another name is memory of device 0 with no known owner.
//
// The stand-in has FAKECUDA_DEVICES physical devices (default 4), each
// with a UUID, a PCI bus id and attributes; FAKECUDA_VISIBLE_DEVICES
// ("2,0") renumbers them as CUDA_VISIBLE_DEVICES does. A context is
// current per thread, one primary context per device: a call from a thread
// without one fails with CUDA_ERROR_INVALID_CONTEXT. Copies are checked
// against the allocations they touch.
//
// Sticky errors: a copy into imported memory whose owner process has
// exited fails with CUDA_ERROR_ILLEGAL_ADDRESS, as would a fault on a real
// GPU, and poisons the context: every later call in it returns the same
// error until cuDevicePrimaryCtxReset_v2, which also drops what the
// context held (streams, IPC and VMM mappings, host registrations made in
// it). fakecuda_inject poisons the next copy on purpose.
//
// Build: cc -shared -fPIC -pthread -o libfakecuda.so fakecuda.c

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef unsigned long long CUmemHandle;
typedef void *CUcontext;
typedef void *CUstream;
typedef struct { char reserved[64]; } CUipcMemHandle;
typedef struct { char bytes[16]; } CUuuid;
typedef struct { int type, id; } CUmemLocation;
typedef struct {
	int type, requestedHandleTypes;
	CUmemLocation location;
	void *win32;
	unsigned char compression, rdma;
	unsigned short usage;
	unsigned char reserved[4];
} CUmemAllocationProp;
typedef struct { CUmemLocation location; int flags; } CUmemAccessDesc;
typedef struct { int srcAccessOrder; CUmemLocation srcLoc, dstLoc; unsigned flags; } CUmemcpyAttributes;

enum {
	OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201, INVALID_HANDLE = 400, NOT_FOUND = 500,
	ILLEGAL_ADDRESS = 700, ALREADY_REGISTERED = 712, NOT_REGISTERED = 713,
	NOT_SUPPORTED = 801,
};

#define MAGIC "FAKE"
#define MAX 1024
#define NDEV 8
#define GRAN (64 << 10)
#define CTXOF(o) ((CUcontext)(uintptr_t)(0x1000 + 0x10 * (o)))

static __thread int current = -1; /* ordinal whose context is current */
static int initialized, ndev, nvisible, visible[NDEV];
static int retained[NDEV], ctxflags[NDEV], sticky[NDEV], inject[NDEV];
static int attrs[NDEV][128];
static int batch_api = 1;
static long counters[4]; /* 0 async copies, 1 batch calls, 2 batch ops, 3 resets */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* An allocation: own (cuMemAlloc), imported IPC mapping, or VMM mapping. */
struct alloc { int used, kind, ord, phys, owner; CUdeviceptr base; size_t size; char path[60]; };
enum { OWN = 1, IPC = 2, VMM = 3 };
struct host { int used, ord; unsigned flags; uintptr_t start; size_t size; };
struct handle { int used, fd, phys; size_t size; };
struct reserve { int used; CUdeviceptr base; size_t size; };
static struct alloc allocs[MAX];
static struct host hosts[MAX];
static struct handle handles[MAX];
static struct reserve reserves[MAX];
static int streams[MAX]; /* ordinal+1 of a live stream's context, 0 free */
static int seq;

static void setup(void) {
	const char *n = getenv("FAKECUDA_DEVICES");
	ndev = n ? atoi(n) : 4;
	if (ndev < 1 || ndev > NDEV) ndev = 4;
	nvisible = 0;
	const char *v = getenv("FAKECUDA_VISIBLE_DEVICES");
	if (v) {
		for (const char *p = v; *p && nvisible < NDEV;) {
			int d = atoi(p);
			if (d >= 0 && d < ndev) visible[nvisible++] = d;
			p = strchr(p, ',');
			if (!p) break;
			p++;
		}
	} else {
		for (int i = 0; i < ndev; i++) visible[nvisible++] = i;
	}
	for (int d = 0; d < NDEV; d++) {
		if (attrs[d][0]) continue; /* set by fakecuda_set_attr already */
		attrs[d][0] = 1;
		attrs[d][33] = 0x10 + d;      /* PCI bus id */
		attrs[d][34] = 0;             /* PCI device id */
		attrs[d][50] = 0;             /* PCI domain id */
		attrs[d][40] = 2;             /* async engines */
		attrs[d][41] = 1;             /* unified addressing */
		attrs[d][91] = 1;             /* host pointer for registered memory */
		attrs[d][99] = 1;             /* host register supported */
		attrs[d][102] = 1;            /* virtual memory management */
		attrs[d][103] = 1;            /* POSIX fd handles */
		attrs[d][113] = 1;            /* read-only host register */
	}
}

static int ordOf(int phys) {
	for (int i = 0; i < nvisible; i++) if (visible[i] == phys) return i;
	return -1;
}
static CUresult ctx(void) {
	if (!initialized) return NOT_INITIALIZED;
	if (current < 0) return INVALID_CONTEXT;
	return sticky[current] ? sticky[current] : OK;
}
/* parse reads owner pid and device from a file name this driver made. */
static void parse(const char *path, int *owner, int *phys) {
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	int pid, s, d;
	*owner = 0; *phys = 0;
	if (sscanf(b, "fc-%d-%d-d%d", &pid, &s, &d) == 3) { *owner = pid; *phys = d; }
}

CUresult cuInit(unsigned int flags) {
	if (flags) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	if (!initialized) setup();
	initialized = 1;
	pthread_mutex_unlock(&mu);
	return OK;
}
CUresult cuDriverGetVersion(int *v) { *v = 12080; return OK; }
CUresult cuDeviceGetCount(int *n) { if (!initialized) return NOT_INITIALIZED; *n = nvisible; return OK; }
static int devok(CUdevice d) { return initialized && d >= 0 && d < nvisible; }
CUresult cuDeviceGet(CUdevice *d, int ord) {
	if (!initialized) return NOT_INITIALIZED;
	if (ord < 0 || ord >= nvisible) return INVALID_DEVICE;
	*d = ord;
	return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	snprintf(name, len, "Fake CUDA Device");
	return OK;
}
CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	static const unsigned char base[16] = {0xfa, 0x4e, 0xc0, 0xda, 0, 0, 0x40, 0, 0x80, 0, 0, 0, 0, 0, 0, 0};
	memcpy(u->bytes, base, 16);
	u->bytes[15] = (char)visible[d];
	return OK;
}
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	if (attr <= 0 || attr >= 128) return INVALID_VALUE;
	*v = attrs[visible[d]][attr];
	return OK;
}
CUresult cuDeviceGetPCIBusId(char *s, int len, CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	snprintf(s, len, "00000000:%02X:00.0", attrs[visible[d]][33]);
	return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *n, CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	*n = (size_t)80 << 30;
	return OK;
}
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice d, unsigned int flags) {
	if (!devok(d)) return INVALID_DEVICE;
	if (flags & ~0x1fu) return INVALID_VALUE;
	ctxflags[d] = (int)flags;
	return OK;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	pthread_mutex_lock(&mu); retained[d]++; pthread_mutex_unlock(&mu);
	*c = CTXOF(d);
	return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	CUresult r = retained[d] > 0 ? OK : INVALID_CONTEXT;
	if (!r) retained[d]--;
	pthread_mutex_unlock(&mu);
	return r;
}
/* drop frees everything context o holds (a reset). Callers hold mu. */
static void drop(int o) {
	for (int i = 0; i < MAX; i++) {
		if (hosts[i].used && hosts[i].ord == o) hosts[i].used = 0;
		if (streams[i] == o + 1) streams[i] = 0;
		if (allocs[i].used && allocs[i].ord == o && allocs[i].kind != OWN) {
			munmap((void *)(uintptr_t)allocs[i].base, allocs[i].size);
			allocs[i].used = 0;
		}
	}
}
CUresult cuDevicePrimaryCtxReset_v2(CUdevice d) {
	if (!devok(d)) return INVALID_DEVICE;
	pthread_mutex_lock(&mu);
	drop(d);
	sticky[d] = 0;
	inject[d] = 0;
	counters[3]++;
	pthread_mutex_unlock(&mu);
	return OK;
}
CUresult cuCtxSetCurrent(CUcontext c) {
	if (c == NULL) { current = -1; return OK; }
	for (int o = 0; o < nvisible; o++)
		if (c == CTXOF(o)) { current = o; return OK; }
	return INVALID_CONTEXT;
}

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
	CUresult r = ctx();
	if (r) return r;
	if (!p || !n || !(flags & 0x01) || (flags & ~0x09u)) return INVALID_VALUE;
	if ((flags & 0x08) && !attrs[visible[current]][113]) return NOT_SUPPORTED;
	uintptr_t s = (uintptr_t)p;
	pthread_mutex_lock(&mu);
	int empty = -1;
	for (int i = 0; i < MAX; i++) {
		if (!hosts[i].used) { if (empty < 0) empty = i; continue; }
		if (s < hosts[i].start + hosts[i].size && hosts[i].start < s + n) { r = ALREADY_REGISTERED; break; }
	}
	if (!r && empty < 0) r = INVALID_VALUE;
	if (!r) hosts[empty] = (struct host){1, current, flags, s, n};
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemHostUnregister(void *p) {
	CUresult r = ctx();
	if (r) return r;
	r = NOT_REGISTERED;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (hosts[i].used && hosts[i].start == (uintptr_t)p) { hosts[i].used = 0; r = OK; break; }
	pthread_mutex_unlock(&mu);
	return r;
}

/* find returns the allocation holding [p, p+n), or NULL. */
static struct alloc *find(CUdeviceptr p, size_t n) {
	for (int i = 0; i < MAX; i++)
		if (allocs[i].used && p >= allocs[i].base && n <= allocs[i].size && p - allocs[i].base <= allocs[i].size - n)
			return &allocs[i];
	return NULL;
}
static struct alloc *slot(void) {
	for (int i = 0; i < MAX; i++) if (!allocs[i].used) return &allocs[i];
	return NULL;
}
static CUresult mapfile(struct alloc *a, int fd, size_t n, void *at) {
	void *m = mmap(at, n, PROT_READ | PROT_WRITE, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);
	if (m == MAP_FAILED) return INVALID_VALUE;
	a->base = (CUdeviceptr)(uintptr_t)m;
	a->size = n;
	a->used = 1;
	a->ord = current;
	return OK;
}
/* newfile creates a file of n bytes for memory of the current device. */
static int newfile(char *path, size_t len, size_t n) {
	const char *dir = getenv("FAKECUDA_DIR");
	snprintf(path, len, "%s/fc-%d-%d-d%d", dir ? dir : "/tmp", (int)getpid(), ++seq, visible[current]);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd >= 0 && ftruncate(fd, (off_t)n) != 0) { close(fd); unlink(path); fd = -1; }
	return fd;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = slot();
	int fd = (a && n) ? newfile(a->path, sizeof a->path, n) : -1;
	r = fd < 0 ? INVALID_VALUE : mapfile(a, fd, n, NULL);
	if (fd >= 0) close(fd);
	if (!r) { a->kind = OWN; a->phys = visible[current]; a->owner = getpid(); *p = a->base; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	CUresult r = (a && a->kind == OWN && a->base == p) ? OK : INVALID_VALUE;
	if (!r) { munmap((void *)(uintptr_t)a->base, a->size); unlink(a->path); a->used = 0; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	if (!a || a->kind != OWN || a->base != p) r = INVALID_VALUE;
	if (!r) { memset(h, 0, sizeof *h); memcpy(h->reserved, MAGIC, 4); strcpy(h->reserved + 4, a->path); }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags) {
	CUresult r = ctx();
	if (r) return r;
	if (flags != 0x01) return INVALID_VALUE;
	if (memcmp(h.reserved, MAGIC, 4) != 0 || !memchr(h.reserved + 4, 0, 60)) return INVALID_HANDLE;
	int owner, phys;
	parse(h.reserved + 4, &owner, &phys);
	if (ordOf(phys) < 0) return INVALID_DEVICE;
	int fd = open(h.reserved + 4, O_RDWR);
	if (fd < 0) return INVALID_HANDLE;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size <= 0) { close(fd); return INVALID_HANDLE; }
	pthread_mutex_lock(&mu);
	struct alloc *a = slot();
	r = a ? mapfile(a, fd, (size_t)st.st_size, NULL) : INVALID_VALUE;
	close(fd);
	if (!r) { a->kind = IPC; a->owner = owner; a->phys = phys; strcpy(a->path, h.reserved + 4); *p = a->base; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	r = (a && a->kind == IPC && a->base == p) ? OK : INVALID_VALUE;
	if (!r) { munmap((void *)(uintptr_t)a->base, a->size); a->used = 0; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	if (a) { *base = a->base; *size = a->size; } else r = INVALID_VALUE;
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuPointerGetAttribute(void *data, int attr, CUdeviceptr p) {
	CUresult r = ctx();
	if (r) return r;
	if (attr != 9) return INVALID_VALUE; /* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL */
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	if (a) *(int *)data = ordOf(a->phys); else r = INVALID_VALUE;
	pthread_mutex_unlock(&mu);
	return r;
}

#include "fakecuda_vmm.h"
#include "fakecuda_copy.h"

CUresult cuGetErrorName(CUresult e, const char **s) {
	switch (e) {
	case OK: *s = "CUDA_SUCCESS"; return OK;
	case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return OK;
	case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return OK;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
	case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; return OK;
	case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
	case ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return OK;
	case 719: *s = "CUDA_ERROR_LAUNCH_FAILED"; return OK;
	case ALREADY_REGISTERED: *s = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; return OK;
	case NOT_REGISTERED: *s = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; return OK;
	case NOT_SUPPORTED: *s = "CUDA_ERROR_NOT_SUPPORTED"; return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}

/* fakecuda_live counts what is still held: retained contexts, registered
   host ranges, live streams, opened IPC and VMM mappings, imported VMM
   handles and address reservations (not own allocations). */
int fakecuda_live(void) {
	pthread_mutex_lock(&mu);
	int n = 0;
	for (int d = 0; d < NDEV; d++) n += retained[d];
	for (int i = 0; i < MAX; i++)
		n += hosts[i].used + (streams[i] != 0) + (allocs[i].used && allocs[i].kind != OWN) + handles[i].used + reserves[i].used;
	pthread_mutex_unlock(&mu);
	return n;
}
/* fakecuda_retained is how many times ordinal o's context is retained. */
int fakecuda_retained(int o) { return o >= 0 && o < NDEV ? retained[o] : -1; }
/* fakecuda_ctx_flags is the flags set on ordinal o's primary context. */
int fakecuda_ctx_flags(int o) { return o >= 0 && o < NDEV ? ctxflags[o] : -1; }
/* fakecuda_host_flags is the registration flags of the range at p, or -1. */
int fakecuda_host_flags(uintptr_t p) {
	int f = -1;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++) if (hosts[i].used && hosts[i].start == p) f = (int)hosts[i].flags;
	pthread_mutex_unlock(&mu);
	return f;
}
/* fakecuda_set_attr sets attribute attr of physical device d. */
void fakecuda_set_attr(int d, int attr, int v) {
	if (d < 0 || d >= NDEV || attr <= 0 || attr >= 128) return;
	if (!attrs[d][0]) { int i = initialized; setup(); initialized = i; }
	attrs[d][attr] = v;
}
/* fakecuda_set_batch makes cuGetProcAddress offer cuMemcpyBatchAsync (1) or not (0). */
void fakecuda_set_batch(int on) { batch_api = on; }
/* fakecuda_inject makes the next copy in ordinal o's context fail with e and poison it. */
void fakecuda_inject(int o, int e) { if (o >= 0 && o < NDEV) inject[o] = e; }
/* fakecuda_counter reads counter i: 0 async copies, 1 batch calls, 2 batched ops, 3 resets. */
long fakecuda_counter(int i) { return i >= 0 && i < 4 ? counters[i] : -1; }
