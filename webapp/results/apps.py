from django.apps import AppConfig


class ResultsConfig(AppConfig):
    name = "webapp.results"
    label = "results"
