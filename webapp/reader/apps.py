from django.apps import AppConfig


class ReaderConfig(AppConfig):
    name = "webapp.reader"
    label = "reader"
