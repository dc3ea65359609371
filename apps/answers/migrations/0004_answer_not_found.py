from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("answers", "0003_answer_ledger")]

    operations = [migrations.AddField(model_name="answer", name="not_found", field=models.BooleanField(default=False))]
