// A stand-in for libcuda.so.1 used by the gpu package's tests on machines
// without a GPU. It exports the driver entry points the package resolves
// (with the same versioned names and signatures) plus the few the tests'
// engine process uses to allocate memory and export it.
//
// "Device memory" is a shared-memory file mapped MAP_SHARED; an IPC handle
// carries the file's path, so another process that opens the handle maps
// the same bytes, as with real CUDA IPC. A context is current per thread,
// as in the real driver: a call from a thread without one fails with
// CUDA_ERROR_INVALID_CONTEXT, which is what proves the package's thread
// model. Copies are checked against the allocations they touch.
//
// Build: cc -shared -fPIC -pthread -o libfakecuda.so fakecuda.c

#include <fcntl.h>
#include <pthread.h>
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
typedef void *CUcontext;
typedef void *CUstream;
typedef struct { char reserved[64]; } CUipcMemHandle;

enum {
	OK = 0, INVALID_VALUE = 1, NOT_INITIALIZED = 3, INVALID_DEVICE = 101,
	INVALID_CONTEXT = 201, INVALID_HANDLE = 400, ALREADY_REGISTERED = 712,
	NOT_REGISTERED = 713,
};

#define CTX ((CUcontext)0x1000)
#define MAGIC "FAKE"
#define MAX 1024

static __thread CUcontext current;
static int initialized, retained;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

struct alloc { int used, owned; CUdeviceptr base; size_t size; char path[60]; };
struct host { int used; uintptr_t start; size_t size; };
static struct alloc allocs[MAX];
static struct host hosts[MAX];
static int streams[MAX]; /* 1 = live */
static int seq;

static CUresult ctx(void) {
	if (!initialized) return NOT_INITIALIZED;
	return current == CTX ? OK : INVALID_CONTEXT;
}

CUresult cuInit(unsigned int flags) { if (flags) return INVALID_VALUE; initialized = 1; return OK; }
CUresult cuDeviceGetCount(int *n) { if (!initialized) return NOT_INITIALIZED; *n = 1; return OK; }
CUresult cuDeviceGet(CUdevice *d, int ord) {
	if (!initialized) return NOT_INITIALIZED;
	if (ord != 0) return INVALID_DEVICE;
	*d = 0;
	return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	if (d != 0) return INVALID_DEVICE;
	snprintf(name, len, "Fake CUDA Device");
	return OK;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
	if (d != 0) return INVALID_DEVICE;
	pthread_mutex_lock(&mu); retained++; pthread_mutex_unlock(&mu);
	*c = CTX;
	return OK;
}
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) {
	if (d != 0) return INVALID_DEVICE;
	pthread_mutex_lock(&mu); retained--; pthread_mutex_unlock(&mu);
	return OK;
}
CUresult cuCtxSetCurrent(CUcontext c) {
	if (c != NULL && c != CTX) return INVALID_CONTEXT;
	current = c;
	return OK;
}

CUresult cuMemHostRegister_v2(void *p, size_t n, unsigned int flags) {
	CUresult r = ctx();
	if (r) return r;
	if (!p || !n || !(flags & 0x01) || (flags & ~0x09u)) return INVALID_VALUE;
	uintptr_t s = (uintptr_t)p;
	pthread_mutex_lock(&mu);
	int empty = -1;
	for (int i = 0; i < MAX; i++) {
		if (!hosts[i].used) { if (empty < 0) empty = i; continue; }
		if (s < hosts[i].start + hosts[i].size && hosts[i].start < s + n) { r = ALREADY_REGISTERED; break; }
	}
	if (!r && empty < 0) r = INVALID_VALUE;
	if (!r) hosts[empty] = (struct host){1, s, n};
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
static CUresult mapfile(struct alloc *a, int fd, size_t n) {
	void *m = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) return INVALID_VALUE;
	a->base = (CUdeviceptr)(uintptr_t)m;
	a->size = n;
	a->used = 1;
	return OK;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	CUresult r = ctx();
	if (r) return r;
	const char *dir = getenv("FAKECUDA_DIR");
	pthread_mutex_lock(&mu);
	struct alloc *a = slot();
	if (!a || !n) { pthread_mutex_unlock(&mu); return INVALID_VALUE; }
	snprintf(a->path, sizeof a->path, "%s/fc-%d-%d", dir ? dir : "/tmp", (int)getpid(), ++seq);
	int fd = open(a->path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)n) != 0) r = INVALID_VALUE;
	if (!r) r = mapfile(a, fd, n);
	if (!r) { a->owned = 1; *p = a->base; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	CUresult r = (a && a->owned && a->base == p) ? OK : INVALID_VALUE;
	if (!r) { munmap((void *)(uintptr_t)a->base, a->size); unlink(a->path); a->used = 0; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuIpcGetMemHandle(CUipcMemHandle *h, CUdeviceptr p) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	if (!a || !a->owned || a->base != p) r = INVALID_VALUE;
	if (!r) { memset(h, 0, sizeof *h); memcpy(h->reserved, MAGIC, 4); strcpy(h->reserved + 4, a->path); }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, CUipcMemHandle h, unsigned int flags) {
	CUresult r = ctx();
	if (r) return r;
	if (flags != 0x01) return INVALID_VALUE;
	if (memcmp(h.reserved, MAGIC, 4) != 0 || !memchr(h.reserved + 4, 0, 60)) return INVALID_HANDLE;
	int fd = open(h.reserved + 4, O_RDWR);
	if (fd < 0) return INVALID_HANDLE;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size <= 0) { close(fd); return INVALID_HANDLE; }
	pthread_mutex_lock(&mu);
	struct alloc *a = slot();
	r = a ? mapfile(a, fd, (size_t)st.st_size) : INVALID_VALUE;
	if (!a) close(fd);
	if (!r) { a->owned = 0; strcpy(a->path, h.reserved + 4); *p = a->base; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, 1);
	r = (a && !a->owned && a->base == p) ? OK : INVALID_VALUE;
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

static CUresult copy(CUdeviceptr d, void *h, size_t n, int in) {
	CUresult r = ctx();
	if (r) return r;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(d, n);
	pthread_mutex_unlock(&mu);
	if (!a || !h) return INVALID_VALUE;
	if (in) memcpy((void *)(uintptr_t)d, h, n); else memcpy(h, (void *)(uintptr_t)d, n);
	return OK;
}
static int live(CUstream s) {
	uintptr_t i = (uintptr_t)s - 0x2000;
	return i < MAX && streams[i];
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) { return copy(d, (void *)h, n, 1); }
CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) { return copy(d, h, n, 0); }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s) {
	return live(s) ? copy(d, (void *)h, n, 1) : INVALID_HANDLE;
}
CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s) {
	return live(s) ? copy(d, h, n, 0) : INVALID_HANDLE;
}
CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
	CUresult r = ctx();
	if (r) return r;
	if (flags & ~0x01u) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	r = INVALID_VALUE;
	for (int i = 1; i < MAX; i++)
		if (!streams[i]) { streams[i] = 1; *s = (CUstream)(uintptr_t)(0x2000 + i); r = OK; break; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuStreamSynchronize(CUstream s) {
	CUresult r = ctx();
	if (r) return r;
	return live(s) ? OK : INVALID_HANDLE;
}
CUresult cuStreamDestroy_v2(CUstream s) {
	CUresult r = ctx();
	if (r) return r;
	if (!live(s)) return INVALID_HANDLE;
	streams[(uintptr_t)s - 0x2000] = 0;
	return OK;
}
CUresult cuGetErrorName(CUresult e, const char **s) {
	switch (e) {
	case OK: *s = "CUDA_SUCCESS"; return OK;
	case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case NOT_INITIALIZED: *s = "CUDA_ERROR_NOT_INITIALIZED"; return OK;
	case INVALID_DEVICE: *s = "CUDA_ERROR_INVALID_DEVICE"; return OK;
	case INVALID_CONTEXT: *s = "CUDA_ERROR_INVALID_CONTEXT"; return OK;
	case INVALID_HANDLE: *s = "CUDA_ERROR_INVALID_HANDLE"; return OK;
	case ALREADY_REGISTERED: *s = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"; return OK;
	case NOT_REGISTERED: *s = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"; return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}

/* fakecuda_live counts what is still held: retained contexts, registered
   host ranges, live streams, opened IPC mappings (not own allocations). */
int fakecuda_live(void) {
	pthread_mutex_lock(&mu);
	int n = retained;
	for (int i = 0; i < MAX; i++) n += hosts[i].used + streams[i] + (allocs[i].used && !allocs[i].owned);
	pthread_mutex_unlock(&mu);
	return n;
}
