/* Virtual memory management of the stand-in driver (included by
   fakecuda.c): cuMemCreate makes a shared-memory file; its shareable
   handle is a descriptor of that file; cuMemMap maps it at a reserved
   address. */

static struct handle *hslot(void) {
	for (int i = 1; i < MAX; i++) if (!handles[i].used) return &handles[i];
	return NULL;
}
static struct handle *hget(CUmemHandle h) {
	return h > 0 && h < MAX && handles[h].used ? &handles[h] : NULL;
}

CUresult cuMemGetAllocationGranularity(size_t *g, const CUmemAllocationProp *p, int opt) {
	if (!p || p->location.type != 1) return INVALID_VALUE;
	*g = GRAN;
	return OK;
}
CUresult cuMemCreate(CUmemHandle *h, size_t n, const CUmemAllocationProp *p, unsigned long long flags) {
	CUresult r = ctx();
	if (r) return r;
	if (!n || n % GRAN || flags || p->type != 1 || p->location.type != 1 || p->location.id != current) return INVALID_VALUE;
	char path[80];
	pthread_mutex_lock(&mu);
	struct handle *s = hslot();
	int fd = s ? newfile(path, sizeof path, n) : -1;
	if (fd >= 0) {
		unlink(path); /* the memory lives as long as a descriptor of it */
		*s = (struct handle){1, fd, visible[current], n};
		*h = (CUmemHandle)(s - handles);
	} else r = INVALID_VALUE;
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemRelease(CUmemHandle h) {
	pthread_mutex_lock(&mu);
	struct handle *s = hget(h);
	if (s) { close(s->fd); s->used = 0; }
	pthread_mutex_unlock(&mu);
	return s ? OK : INVALID_HANDLE;
}
CUresult cuMemExportToShareableHandle(void *out, CUmemHandle h, int type, unsigned long long flags) {
	CUresult r = ctx();
	if (r) return r;
	if (type != 1 || flags) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct handle *s = hget(h);
	int fd = s ? dup(s->fd) : -1;
	pthread_mutex_unlock(&mu);
	if (fd < 0) return INVALID_HANDLE;
	*(int *)out = fd;
	return OK;
}
/* devOfFd reads the device of a VMM file from its /proc name. */
static int devOfFd(int fd) {
	char link[64], path[256];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof path - 1);
	if (n <= 0) return 0;
	path[n] = 0;
	char *del = strstr(path, " (deleted)");
	if (del) *del = 0;
	int owner, phys;
	parse(path, &owner, &phys);
	return phys;
}
CUresult cuMemImportFromShareableHandle(CUmemHandle *h, void *os, int type) {
	CUresult r = ctx();
	if (r) return r;
	if (type != 1) return INVALID_VALUE;
	int fd = dup((int)(intptr_t)os);
	if (fd < 0) return INVALID_HANDLE;
	struct stat st;
	if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size % GRAN) { close(fd); return INVALID_HANDLE; }
	pthread_mutex_lock(&mu);
	struct handle *s = hslot();
	if (s) { *s = (struct handle){1, fd, devOfFd(fd), (size_t)st.st_size}; *h = (CUmemHandle)(s - handles); }
	else { close(fd); r = INVALID_VALUE; }
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *p, CUmemHandle h) {
	pthread_mutex_lock(&mu);
	struct handle *s = hget(h);
	if (s) { memset(p, 0, sizeof *p); p->type = 1; p->requestedHandleTypes = 1; p->location.type = 1; p->location.id = ordOf(s->phys); }
	pthread_mutex_unlock(&mu);
	return s ? OK : INVALID_HANDLE;
}
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t n, size_t align, CUdeviceptr addr, unsigned long long flags) {
	CUresult r = ctx();
	if (r) return r;
	if (!n || n % GRAN || flags) return INVALID_VALUE;
	void *m = mmap(NULL, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (!reserves[i].used) { reserves[i] = (struct reserve){1, (CUdeviceptr)(uintptr_t)m, n}; break; }
	pthread_mutex_unlock(&mu);
	*p = (CUdeviceptr)(uintptr_t)m;
	return OK;
}
CUresult cuMemAddressFree(CUdeviceptr p, size_t n) {
	CUresult r = INVALID_VALUE;
	pthread_mutex_lock(&mu);
	for (int i = 0; i < MAX; i++)
		if (reserves[i].used && reserves[i].base == p && reserves[i].size == n) {
			munmap((void *)(uintptr_t)p, n);
			reserves[i].used = 0;
			r = OK;
		}
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemHandle h, unsigned long long flags) {
	CUresult r = ctx();
	if (r) return r;
	if (off || flags) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct handle *s = hget(h);
	struct alloc *a = slot();
	if (!s || n != s->size) r = INVALID_HANDLE;
	else if (!a) r = INVALID_VALUE;
	else r = mapfile(a, s->fd, n, (void *)(uintptr_t)p);
	if (!r) {
		mprotect((void *)(uintptr_t)p, n, PROT_NONE); /* no access until cuMemSetAccess */
		a->kind = VMM; a->owner = 0; a->phys = s->phys; a->path[0] = 0;
	}
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemSetAccess(CUdeviceptr p, size_t n, const CUmemAccessDesc *d, size_t count) {
	CUresult r = ctx();
	if (r) return r;
	if (count != 1 || d->location.type != 1 || d->flags != 3) return INVALID_VALUE;
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, n);
	if (!a || a->kind != VMM) r = INVALID_VALUE;
	else mprotect((void *)(uintptr_t)p, n, PROT_READ | PROT_WRITE);
	pthread_mutex_unlock(&mu);
	return r;
}
CUresult cuMemUnmap(CUdeviceptr p, size_t n) {
	pthread_mutex_lock(&mu);
	struct alloc *a = find(p, n);
	CUresult r = (a && a->kind == VMM && a->base == p && a->size == n) ? OK : INVALID_VALUE;
	if (!r) {
		/* Back to a bare reservation. */
		mmap((void *)(uintptr_t)p, n, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
		a->used = 0;
	}
	pthread_mutex_unlock(&mu);
	return r;
}
