/*
 * A sound card's mixer for tests: an ALSA control plugin ("type testmixer")
 * with one stereo playback volume, so that the satellite's volume goes
 * through the real snd_mixer_* calls a USB speaker's card would get.  The
 * `file` plugin under the test speaker has no mixer at all.
 *
 *   ctl_type.testmixer { lib "/tmp/t/libasound_module_ctl_testmixer.so" }
 *   ctl.mixer { type testmixer file "/tmp/t/volume" control "Master" }
 *
 * The control is "<control> Playback Volume", two channels, 0 to 87 (an odd
 * range, so a percentage must be scaled).  Its value lives in `file` as two
 * numbers ("left right"), read and written on every access, so the test and
 * every opener see the same card; a missing file reads as 87 87.
 *
 * Built by the tests:  cc -shared -fPIC -DPIC -o libasound_module_ctl_testmixer.so alsa_mixer.c -lasound
 */
#include <alsa/asoundlib.h>
#include <alsa/control_external.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOLUME_MAX 87

typedef struct {
	snd_ctl_ext_t ext;
	char *file;
	char name[64];
} testmixer_t;

static int read_values(testmixer_t *m, long *value)
{
	value[0] = value[1] = VOLUME_MAX;
	FILE *f = fopen(m->file, "r");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	int got = fscanf(f, "%ld %ld", &value[0], &value[1]);
	fclose(f);
	return got == 2 ? 0 : -EIO;
}

static int write_values(testmixer_t *m, const long *value)
{
	char temporary[4096];
	snprintf(temporary, sizeof temporary, "%s.tmp", m->file);
	FILE *f = fopen(temporary, "w");
	if (!f)
		return -errno;
	fprintf(f, "%ld %ld\n", value[0], value[1]);
	if (fclose(f) != 0 || rename(temporary, m->file) != 0)
		return -errno;
	return 0;
}

static int elem_count(snd_ctl_ext_t *ext)
{
	(void)ext;
	return 1;
}

static int elem_list(snd_ctl_ext_t *ext, unsigned int offset, snd_ctl_elem_id_t *id)
{
	testmixer_t *m = ext->private_data;
	if (offset != 0)
		return -EINVAL;
	snd_ctl_elem_id_set_interface(id, SND_CTL_ELEM_IFACE_MIXER);
	snd_ctl_elem_id_set_name(id, m->name);
	return 0;
}

static snd_ctl_ext_key_t find_elem(snd_ctl_ext_t *ext, const snd_ctl_elem_id_t *id)
{
	testmixer_t *m = ext->private_data;
	if (snd_ctl_elem_id_get_numid(id) == 1 || strcmp(snd_ctl_elem_id_get_name(id), m->name) == 0)
		return 0;
	return SND_CTL_EXT_KEY_NOT_FOUND;
}

static int get_attribute(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, int *type, unsigned int *acc, unsigned int *count)
{
	(void)ext;
	if (key != 0)
		return -EINVAL;
	*type = SND_CTL_ELEM_TYPE_INTEGER;
	*acc = SND_CTL_EXT_ACCESS_READWRITE;
	*count = 2;
	return 0;
}

static int get_integer_info(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *imin, long *imax, long *istep)
{
	(void)ext;
	if (key != 0)
		return -EINVAL;
	*imin = 0;
	*imax = VOLUME_MAX;
	*istep = 1;
	return 0;
}

static int read_integer(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *value)
{
	if (key != 0)
		return -EINVAL;
	return read_values(ext->private_data, value);
}

static int write_integer(snd_ctl_ext_t *ext, snd_ctl_ext_key_t key, long *value)
{
	if (key != 0)
		return -EINVAL;
	long old[2];
	int err = read_values(ext->private_data, old);
	if (err < 0)
		return err;
	for (int i = 0; i < 2; i++)
		if (value[i] < 0 || value[i] > VOLUME_MAX)
			return -EINVAL;
	err = write_values(ext->private_data, value);
	if (err < 0)
		return err;
	return old[0] != value[0] || old[1] != value[1];
}

static int read_event(snd_ctl_ext_t *ext, snd_ctl_elem_id_t *id, unsigned int *event_mask)
{
	(void)ext; (void)id; (void)event_mask;
	return -EAGAIN;
}

static void close_mixer(snd_ctl_ext_t *ext)
{
	testmixer_t *m = ext->private_data;
	free(m->file);
	free(m);
}

static const snd_ctl_ext_callback_t callbacks = {
	.close = close_mixer,
	.elem_count = elem_count,
	.elem_list = elem_list,
	.find_elem = find_elem,
	.get_attribute = get_attribute,
	.get_integer_info = get_integer_info,
	.read_integer = read_integer,
	.write_integer = write_integer,
	.read_event = read_event,
};

SND_CTL_PLUGIN_DEFINE_FUNC(testmixer)
{
	(void)root;
	snd_config_iterator_t i, next;
	const char *file = NULL, *control = "Master";
	snd_config_for_each(i, next, conf) {
		snd_config_t *n = snd_config_iterator_entry(i);
		const char *id;
		if (snd_config_get_id(n, &id) < 0)
			continue;
		if (strcmp(id, "comment") == 0 || strcmp(id, "type") == 0 || strcmp(id, "hint") == 0)
			continue;
		if (strcmp(id, "file") == 0 && snd_config_get_string(n, &file) >= 0)
			continue;
		if (strcmp(id, "control") == 0 && snd_config_get_string(n, &control) >= 0)
			continue;
		SNDERR("Unknown field %s", id);
		return -EINVAL;
	}
	if (!file) {
		SNDERR("testmixer needs a file");
		return -EINVAL;
	}
	testmixer_t *m = calloc(1, sizeof *m);
	if (!m)
		return -ENOMEM;
	m->file = strdup(file);
	snprintf(m->name, sizeof m->name, "%s Playback Volume", control);
	m->ext.version = SND_CTL_EXT_VERSION;
	m->ext.card_idx = 0;
	strncpy(m->ext.id, "testmixer", sizeof m->ext.id - 1);
	strncpy(m->ext.driver, "testmixer", sizeof m->ext.driver - 1);
	strncpy(m->ext.name, "Test mixer", sizeof m->ext.name - 1);
	strncpy(m->ext.longname, "A mixer for the satellite's tests", sizeof m->ext.longname - 1);
	strncpy(m->ext.mixername, "Test mixer", sizeof m->ext.mixername - 1);
	m->ext.poll_fd = -1;
	m->ext.callback = &callbacks;
	m->ext.private_data = m;
	int err = snd_ctl_ext_create(&m->ext, name, mode);
	if (err < 0) {
		free(m->file);
		free(m);
		return err;
	}
	*handlep = m->ext.handle;
	return 0;
}

SND_CTL_PLUGIN_SYMBOL(testmixer);
