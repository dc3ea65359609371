# The feed is read in (seq, id) order (apps/vectors/store.py: store_changes); the new index is made
# before the old one goes.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('vectors', '0002_collection_space'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='storedvector',
            index=models.Index(fields=['space', 'seq', 'id'], name='vectors_space_seq_id'),
        ),
        migrations.RemoveIndex(
            model_name='storedvector',
            name='vectors_space_seq',
        ),
    ]
