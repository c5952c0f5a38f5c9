import streamlit as st

st.title("What-if")
